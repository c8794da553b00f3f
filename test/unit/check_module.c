/*
 * check_module.c - the loader of data-path modules (netdev/module.c): the
 * message of every way a module can be missing or unusable names the
 * module, the paths tried and what was wrong (dlerror() or the check that
 * failed), a failure is retried once sampi_module_path changes, and the
 * real modules of the build tree load.  No MPI: loading needs none.  Each
 * test runs in its own process (Check forks), so each starts with nothing
 * loaded.  The parts that need the build tree (the modules and the fakes of
 * fake_module.c) use $top_builddir, which make check exports.
 */
#define _GNU_SOURCE /* dladdr */
#include "config.h"
#include "dgram.h"
#include "module.h"
#include "netdev.h"
#include "suites.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char err[2048];

static void set_path(const char *path)
{
    char e[600];
    ck_assert_msg(sampi_cvar_set(SAMPI_CVAR_MODULE_PATH, path, e, sizeof(e)) == 0, "%s", e);
}

/* A new empty directory under /tmp, into buf. */
static void temp_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/sampi-check-module-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static void expect_failure(const char *name, const char *must1, const char *must2,
                           const char *must3)
{
    err[0] = '\0';
    ck_assert_ptr_null(sampi_netdev_load(name, err, sizeof(err)));
    ck_assert_msg(strstr(err, must1), "'%s' does not mention '%s'", err, must1);
    ck_assert_msg(!must2 || strstr(err, must2), "'%s' does not mention '%s'", err, must2);
    ck_assert_msg(!must3 || strstr(err, must3), "'%s' does not mention '%s'", err, must3);
}

START_TEST(unknown_names)
{
    expect_failure("nope", "no netdev 'nope'", NULL, NULL);
    ck_assert_ptr_null(sampi_dgram_load("nope", err, sizeof(err)));
    ck_assert_msg(strstr(err, "no datagram transport 'nope'"), "%s", err);
}
END_TEST

START_TEST(missing_module)
{
    char dir[64], file[128];
    temp_dir(dir, sizeof(dir));
    set_path(dir);
    snprintf(file, sizeof(file), "%s/sampi_netdev_ofi.so", dir);
    expect_failure("ofi", "cannot load module sampi_netdev_ofi.so for 'ofi'", file,
                   "No such file or directory");
    ck_assert_ptr_null(sampi_dgram_load("ofi-udp", err, sizeof(err)));
    ck_assert_msg(strstr(err, "sampi_dgram_ofi_udp.so"), "%s", err);
    ck_assert_ptr_eq(sampi_netdev_load("mpi", NULL, 0), &sampi_netdev_mpi_ops); /* built in */
    rmdir(dir);
}
END_TEST

/* Of several directories, the one whose file is there but unusable says
 * why; all of them are listed. */
START_TEST(unusable_files)
{
    char empty[64], junk[64], lib[64], path[256], file[128];
    temp_dir(empty, sizeof(empty));
    temp_dir(junk, sizeof(junk));
    temp_dir(lib, sizeof(lib));
    snprintf(file, sizeof(file), "%s/sampi_netdev_ofi.so", junk);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 16; i++) /* longer than an ELF header, or dlerror says "too short" */
        fputs("not a shared object\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s:%s", empty, junk);
    set_path(path);
    expect_failure("ofi", file, empty, "invalid ELF header");
    unlink(file);

    /* a shared object that is no SAMPI module: libm */
    Dl_info info;
    ck_assert(dladdr((void *)&cos, &info) && info.dli_fname);
    snprintf(file, sizeof(file), "%s/sampi_netdev_ofi.so", lib);
    ck_assert_int_eq(symlink(info.dli_fname, file), 0);
    set_path(lib);
    expect_failure("ofi", file, "no symbol sampi_module", NULL);
    unlink(file);
    rmdir(empty);
    rmdir(junk);
    rmdir(lib);
}
END_TEST

/* The fakes of fake_module.c, each linked in as sampi_netdev_ofi.so. */
START_TEST(refused_modules)
{
    const char *top = getenv("top_builddir");
    if (!top) {
        printf("check_module: top_builddir not set: fake modules not tried\n");
        return;
    }
    static const struct {
        const char *fake, *must;
    } cases[] = {
        {"fake_abi", "built for module ABI"},
        {"fake_cvars", "another list of control variables"},
        {"fake_init", "its init failed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dir[64], file[128], target[1024];
        temp_dir(dir, sizeof(dir));
        snprintf(target, sizeof(target), "%s/test/unit/.libs/%s.so", top, cases[i].fake);
        ck_assert_msg(access(target, R_OK) == 0, "%s was not built", target);
        snprintf(file, sizeof(file), "%s/sampi_netdev_ofi.so", dir);
        ck_assert_int_eq(symlink(target, file), 0);
        set_path(dir); /* a new path: the loader tries again */
        expect_failure("ofi", file, cases[i].must, NULL);
        unlink(file);
        rmdir(dir);
    }
}
END_TEST

/* A failure is remembered only until the path changes; a module that
 * loaded stays, whatever the path says later. */
START_TEST(build_tree_modules)
{
    const char *top = getenv("top_builddir");
    if (!top) {
        printf("check_module: top_builddir not set: the build tree's modules not tried\n");
        return;
    }
    char dir[64], libs[1024];
    temp_dir(dir, sizeof(dir));
    set_path(dir);
    ck_assert_ptr_null(sampi_netdev_load("ofi", NULL, 0));
    ck_assert_ptr_null(sampi_netdev_load("ofi", NULL, 0)); /* remembered */
    snprintf(libs, sizeof(libs), "%s/.libs", top);
    set_path(libs);
    const struct sampi_netdev_ops *ofi = sampi_netdev_load("ofi", err, sizeof(err));
    ck_assert_msg(ofi != NULL, "%s", err);
    ck_assert_str_eq(ofi->name, "ofi");
    ck_assert_ptr_nonnull(ofi->open);
    const struct sampi_dgram_ops *udp = sampi_dgram_load("ofi-udp", err, sizeof(err));
    ck_assert_msg(udp != NULL, "%s", err);
    ck_assert_str_eq(udp->name, "ofi-udp");
    for (int i = 0; sampi_dgram_names[i]; i++) {
        const struct sampi_dgram_ops *ops =
            sampi_dgram_load(sampi_dgram_names[i], err, sizeof(err));
        ck_assert_msg(ops != NULL, "%s", err);
        ck_assert_str_eq(ops->name, sampi_dgram_names[i]);
    }
    set_path(dir);
    ck_assert_ptr_eq(sampi_netdev_load("ofi", NULL, 0), ofi);
    rmdir(dir);
}
END_TEST

Suite *sampi_module_suite(void)
{
    return UNIT_SUITE("module", {.name = "loader",
                                 UNIT_TESTS(unknown_names, missing_module, unusable_files,
                                            refused_modules, build_tree_modules)});
}
