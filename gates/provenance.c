// gates/provenance.c: git commit, SHA-256 digest of a folder, architecture (see provenance.h).
#include "provenance.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/error.h"
#include "fixtures/generator.h"

// out = a/b; 0 when it does not fit.
static int join(char *out, size_t size, const char *a, const char *b) {
    int n = snprintf(out, size, "%s/%s", a, b);
    return n >= 0 && (size_t)n < size;
}

int prov_sha256_dir(const char *dir, char hex[65]) {
    const char *base = getenv("TMPDIR");
    char manifest[4096];
    if (!base || !*base) base = "/tmp";
    if (!join(manifest, sizeof manifest, base, "sparkgate-manifest-XXXXXX"))
        return sg_fail(SG_EXIT_INPUT, "$TMPDIR is too long for a temporary file");
    int fd = mkstemp(manifest);
    if (fd < 0) return sg_fail(SG_EXIT_INPUT, "%s: cannot create a temporary file", manifest);
    close(fd);
    int st = fixture_manifest_write(dir, manifest);
    if (st == SG_OK) st = fixture_sha256_file(manifest, hex);
    unlink(manifest);
    return st == SG_OK ? SG_OK : sg_fail_context(st, "SHA-256 of the folder %s", dir);
}

// The first line of a file (without the newline), or 0 when it cannot be read.
static int first_line(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(out, (int)size, f) != NULL;
    fclose(f);
    if (ok) out[strcspn(out, "\r\n")] = 0;
    return ok;
}

static int is_sha(const char *s) {
    size_t n = strlen(s);
    if (n != 40 && n != 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
    return 1;
}

// A ref's commit: the loose file under gitdir or the common dir, else packed-refs.
static int resolve_ref(const char *gitdir, const char *common, const char *ref, char *out,
                       size_t size) {
    char path[8192], line[1024];
    const char *dirs[2] = {gitdir, common};
    for (int i = 0; i < 2; i++) {
        if (join(path, sizeof path, dirs[i], ref) && first_line(path, line, sizeof line) &&
            is_sha(line)) {
            snprintf(out, size, "%s", line);
            return 1;
        }
    }
    FILE *f = join(path, sizeof path, common, "packed-refs") ? fopen(path, "r") : NULL;
    if (!f) return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *space = strchr(line, ' ');
        if (line[0] == '#' || line[0] == '^' || !space) continue;
        *space = 0;
        if (strcmp(space + 1, ref) == 0 && is_sha(line)) {
            snprintf(out, size, "%s", line);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

void prov_git_sha(const char *source_dir, char *out, size_t size) {
    char gitdir[4096], common[4096], line[4096], path[8192];
    snprintf(out, size, "unknown");
    if (!join(gitdir, sizeof gitdir, source_dir, ".git")) return;
    struct stat sb;
    if (stat(gitdir, &sb) != 0) return;
    if (S_ISREG(sb.st_mode)) { // a worktree or submodule: "gitdir: PATH"
        if (!first_line(gitdir, line, sizeof line) || strncmp(line, "gitdir: ", 8) != 0) return;
        if (line[8] == '/' ? snprintf(gitdir, sizeof gitdir, "%s", line + 8) >= (int)sizeof gitdir
                           : !join(gitdir, sizeof gitdir, source_dir, line + 8))
            return;
    }
    snprintf(common, sizeof common, "%s", gitdir);
    if (join(path, sizeof path, gitdir, "commondir") && first_line(path, line, sizeof line) &&
        (line[0] == '/' ? snprintf(common, sizeof common, "%s", line) >= (int)sizeof common
                        : !join(common, sizeof common, gitdir, line)))
        return;
    if (!join(path, sizeof path, gitdir, "HEAD") || !first_line(path, line, sizeof line)) return;
    if (is_sha(line)) snprintf(out, size, "%s", line);
    else if (strncmp(line, "ref: ", 5) == 0) resolve_ref(gitdir, common, line + 5, out, size);
}

void prov_architecture(char *out, size_t size) {
    struct utsname u;
    if (uname(&u) == 0) snprintf(out, size, "%s", u.machine);
    else snprintf(out, size, "unknown");
}
