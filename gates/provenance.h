// gates/provenance.h: where a gate result came from: the source tree's git commit, SHA-256
// digests of the fixture and checkpoint folders, and the architecture.
//
// Contract:
// - prov_sha256_dir: the SHA-256 (OpenSSL, through fixture_sha256_file) of the folder's manifest,
//   fixture_manifest_write's "<hex>  <relative/path>\n" line per regular file below dir, sorted
//   by path; so, in dir, `find -L . -type f | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum |
//   sha256sum` gives the same digest. SG_EXIT_INPUT naming dir when it cannot be read.
// - prov_git_sha: the commit the source tree's HEAD names, read from its .git folder (a detached
//   HEAD, a loose ref or packed-refs; a worktree's .git file and commondir are followed), without
//   running git; "unknown" when there is none.
// - prov_architecture: the machine (uname -m), or "unknown".
#ifndef SG_GATES_PROVENANCE_H
#define SG_GATES_PROVENANCE_H

#include <stddef.h>

int prov_sha256_dir(const char *dir, char hex[65]);
void prov_git_sha(const char *source_dir, char *out, size_t size);
void prov_architecture(char *out, size_t size);

#endif
