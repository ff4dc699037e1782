// gates/strbuf.h: a growing text buffer for the gate's reports (failure texts, JUnit XML).
// Contract: sb_printf / sb_put / sb_shell_word append (the text stays NUL-terminated); sb_take
// hands the text to the caller (an empty string when nothing was appended) and resets the buffer.
#ifndef SG_GATES_STRBUF_H
#define SG_GATES_STRBUF_H

#include <stddef.h>

typedef struct {
    char *s;
    size_t n, cap;
} strbuf;

void sb_put(strbuf *b, const char *text, size_t n);
void sb_puts(strbuf *b, const char *text);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Appends word as one shell word: as is when it holds only [A-Za-z0-9_./:=,+-], else in single
// quotes (a quote inside as '\'').
void sb_shell_word(strbuf *b, const char *word);
char *sb_take(strbuf *b);

#endif
