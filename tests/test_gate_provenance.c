// tests/test_gate_provenance.c: gates/provenance.c: the SHA-256 of folders (the digest `sha256sum`
// gives over the sorted file list, symbolic links followed; a missing folder is a bad-input error
// naming it), the git commit read from a .git folder (loose ref, packed-refs, detached HEAD, a
// worktree's .git file and commondir, nothing: "unknown"), and the architecture.
// ctest-labels: cpu;unit
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/error.h"
#include "gates/provenance.h"
#include "testutil.h"

static char dir[512];

static void write_text(const char *rel, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    tu_write_file(path, text, strlen(text));
}

static void make_dir(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(path, 0755), 0);
}

static void setup(void) { tu_tmpdir(dir, sizeof dir); }

START_TEST(test_sha256_dir) {
    char hex[65], link[1024], root[600];
    snprintf(root, sizeof root, "%s/set", dir);
    ck_assert_int_eq(mkdir(root, 0755), 0);
    make_dir("set/sub");
    write_text("set/a", "abc");
    write_text("set/sub/b", "");
    // = `find -L . -type f | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum | sha256sum`
    ck_assert_int_eq(prov_sha256_dir(root, hex), SG_OK);
    ck_assert_str_eq(hex, "dc7985379b2970377f8cfa3b73a7d5f52be47c91e4e9c21c5318508111bc9c76");
    snprintf(link, sizeof link, "%s/set/zlink", dir); // a symbolic link is followed
    ck_assert_int_eq(symlink("a", link), 0);
    ck_assert_int_eq(prov_sha256_dir(root, hex), SG_OK);
    ck_assert_str_eq(hex, "77d92db3efcf0fb539a7bd7de72c79bae10c58e6f923d7ebe439541125ec4b6f");
    write_text("set/sub/b", "x"); // any change in any file changes the digest
    char other[65];
    ck_assert_int_eq(prov_sha256_dir(root, other), SG_OK);
    ck_assert_str_ne(hex, other);
    snprintf(root, sizeof root, "%s/missing", dir);
    ck_assert_int_eq(prov_sha256_dir(root, hex), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), root));
}
END_TEST

static const char *sha1 = "0123456789abcdef0123456789abcdef01234567";
static const char *sha2 = "89abcdef0123456789abcdef0123456789abcdef";

START_TEST(test_git_sha) {
    char out[64], src[600];
    snprintf(src, sizeof src, "%s", dir);
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, "unknown"); // no .git
    make_dir(".git");
    make_dir(".git/refs");
    make_dir(".git/refs/heads");
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, "unknown"); // no HEAD
    write_text(".git/HEAD", "ref: refs/heads/main\n");
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, "unknown"); // an unborn branch
    char packed[256];
    snprintf(packed, sizeof packed, "# pack-refs with: peeled\n%s refs/heads/other\n%s "
             "refs/heads/main\n^%s\n", sha2, sha1, sha2);
    write_text(".git/packed-refs", packed);
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, sha1); // packed
    char loose[64];
    snprintf(loose, sizeof loose, "%s\n", sha2);
    write_text(".git/refs/heads/main", loose);
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, sha2); // a loose ref wins over packed-refs
    snprintf(loose, sizeof loose, "%s\n", sha1);
    write_text(".git/HEAD", loose);
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, sha1); // detached
    write_text(".git/HEAD", "garbage\n");
    prov_git_sha(src, out, sizeof out);
    ck_assert_str_eq(out, "unknown");
    // A worktree: .git is a file naming its git dir, whose commondir holds the refs.
    char wt[600], gitfile[700];
    snprintf(wt, sizeof wt, "%s/wt", dir);
    make_dir("wt");
    make_dir(".git/worktrees");
    make_dir(".git/worktrees/wt");
    snprintf(gitfile, sizeof gitfile, "gitdir: %s/.git/worktrees/wt\n", dir);
    write_text("wt/.git", gitfile);
    write_text(".git/worktrees/wt/commondir", "../..\n");
    write_text(".git/worktrees/wt/HEAD", "ref: refs/heads/main\n");
    write_text(".git/refs/heads/main", loose);
    prov_git_sha(wt, out, sizeof out);
    ck_assert_str_eq(out, sha1);
    // The source tree of this build has a commit or says "unknown"; never anything else.
    prov_git_sha(SG_SOURCE_DIR, out, sizeof out);
    ck_assert(strcmp(out, "unknown") == 0 || strlen(out) == 40 || strlen(out) == 64);
}
END_TEST

START_TEST(test_architecture) {
    char out[64];
    struct utsname u;
    ck_assert_int_eq(uname(&u), 0);
    prov_architecture(out, sizeof out);
    ck_assert_str_eq(out, u.machine);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_provenance");
    TCase *tc = tcase_create("provenance");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_sha256_dir);
    tcase_add_test(tc, test_git_sha);
    tcase_add_test(tc, test_architecture);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
