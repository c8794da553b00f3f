/*
 * check_dgram.c - the pure parts of the datagram transports: the DPDK EAL
 * command line (netdev/dpdk_args.c) and the send() argument checks shared
 * by every backend (netdev/dgram_util.c), and the table of transports
 * (netdev/dgram.c; loading them is check_module.c's).  No MPI, no DPDK.
 */
#include "sampi_autoconf.h"

#include "dgram_backend.h"
#include "suites.h"

#include <errno.h>
#include <string.h>

START_TEST(default_command_line)
{
    char out[512];
    ck_assert_int_eq(
        sampi_dpdk_eal_cmdline("", "net_af_packet0,iface=sd%r", 42, 3, 1, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "--no-huge -m 512 --no-pci --no-telemetry --file-prefix=sampi-42 "
                          "--log-level=warning --vdev=net_af_packet0,iface=sd3 -l 1");
    /* NULL means empty too, and no vdev and no CPU add nothing. */
    ck_assert_int_eq(sampi_dpdk_eal_cmdline(NULL, NULL, 7, 0, -1, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "--no-huge -m 512 --no-pci --no-telemetry --file-prefix=sampi-7 "
                          "--log-level=warning");
}
END_TEST

START_TEST(user_arguments_and_escapes)
{
    char out[256];
    ck_assert_int_eq(
        sampi_dpdk_eal_cmdline("--file-prefix=r%r-p%p 100%% %x", "", 9, 12, 0, out, sizeof(out)),
        0);
    ck_assert_str_eq(out, "--file-prefix=r12-p9 100% %x -l 0");
}
END_TEST

START_TEST(user_lcores_win)
{
    const char *const chosen[] = {"-l 0-1", "-l2", "-c 0x3", "-c3", "--lcores=1@0", "x --lcores 1"};
    char out[256];
    for (size_t i = 0; i < sizeof(chosen) / sizeof(chosen[0]); i++) {
        ck_assert_int_eq(sampi_dpdk_eal_cmdline(chosen[i], "v", 1, 0, 5, out, sizeof(out)), 0);
        ck_assert_msg(strstr(out, " -l 5") == NULL, "'%s' got an lcore added: '%s'", chosen[i],
                      out);
    }
    /* --log-level starts with "-" and "l" but is no lcore option. */
    ck_assert_int_eq(sampi_dpdk_eal_cmdline("--log-level=debug", "", 1, 0, 5, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "--log-level=debug -l 5");
}
END_TEST

START_TEST(too_long_is_an_error)
{
    char out[40];
    ck_assert_int_eq(sampi_dpdk_eal_cmdline("", "", 1, 0, -1, out, sizeof(out)), -ENAMETOOLONG);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(sampi_dpdk_eal_cmdline("-a", "0123456789012345678901234567890123", 1, 0, -1,
                                            out, sizeof(out)),
                     -ENAMETOOLONG);
    /* Exactly full: 39 characters and the terminator. */
    ck_assert_int_eq(sampi_dpdk_eal_cmdline("012345678901234567890123456789012345678", "", 1, 0, -1,
                                            out, sizeof(out)),
                     0);
    ck_assert_int_eq(sampi_dpdk_eal_cmdline("0123456789012345678901234567890123456789", "", 1, 0,
                                            -1, out, sizeof(out)),
                     -ENAMETOOLONG);
}
END_TEST

START_TEST(split_in_place)
{
    char text[] = "  --no-huge\t-m 512   --vdev=a,b  ";
    char *argv[8];
    int argc = sampi_dpdk_split_args(text, argv, 8);
    ck_assert_int_eq(argc, 5);
    ck_assert_str_eq(argv[0], "sampi");
    ck_assert_str_eq(argv[1], "--no-huge");
    ck_assert_str_eq(argv[2], "-m");
    ck_assert_str_eq(argv[3], "512");
    ck_assert_str_eq(argv[4], "--vdev=a,b");
    ck_assert_ptr_null(argv[5]);
    char empty[] = "   ";
    ck_assert_int_eq(sampi_dpdk_split_args(empty, argv, 8), 1);
    ck_assert_ptr_null(argv[1]);
    char many[] = "a b c d";
    ck_assert_int_eq(sampi_dpdk_split_args(many, argv, 5), -E2BIG);
    char fits[] = "a b c";
    ck_assert_int_eq(sampi_dpdk_split_args(fits, argv, 5), 4);
}
END_TEST

START_TEST(af_packet_interface)
{
    char name[32];
    ck_assert_int_eq(
        sampi_dpdk_vdev_iface("net_af_packet0,iface=sd%r,qdisc_bypass=0", 1, 7, name, sizeof(name)),
        1);
    ck_assert_str_eq(name, "sd7");
    ck_assert_int_eq(
        sampi_dpdk_vdev_iface("net_af_packet1,qpairs=2,iface=eth%r", 1, 0, name, sizeof(name)), 1);
    ck_assert_str_eq(name, "eth0");
    ck_assert_int_eq(sampi_dpdk_vdev_iface("net_tap0,iface=tap0", 1, 0, name, sizeof(name)), 0);
    ck_assert_int_eq(sampi_dpdk_vdev_iface("net_af_packet0", 1, 0, name, sizeof(name)), 0);
    ck_assert_int_eq(sampi_dpdk_vdev_iface("net_af_packet0,iface=", 1, 0, name, sizeof(name)), 0);
    ck_assert_int_eq(sampi_dpdk_vdev_iface("", 1, 0, name, sizeof(name)), 0);
    ck_assert_int_eq(sampi_dpdk_vdev_iface(NULL, 1, 0, name, sizeof(name)), 0);
    ck_assert_int_eq(
        sampi_dpdk_vdev_iface("net_af_packet0,iface=averyveryverylongname", 1, 0, name, 8), 0);
}
END_TEST

START_TEST(af_packet_ring_geometry)
{
    char out[256];
    struct sampi_dpdk_afp g;
    /* 1500: 2 KiB frames, two per 4 KiB page, 16 MiB of them */
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,iface=sd%r,qdisc_bypass=0", 1500,
                                               16 << 20, 4096, out, sizeof(out), &g),
                     1);
    ck_assert_str_eq(out, "net_af_packet0,iface=sd%r,qdisc_bypass=0,framesz=2048,blocksz=4096,"
                          "framecnt=8192");
    ck_assert_int_eq(g.max_mtu, 2048 - 80);
    /* 9000: 9000 + 80 needs 16 KiB frames, one per block */
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,iface=sd0", 9000, 16 << 20, 4096,
                                               out, sizeof(out), &g),
                     1);
    ck_assert_str_eq(out, "net_af_packet0,iface=sd0,framesz=16384,blocksz=16384,framecnt=1024");
    ck_assert_int_eq(g.framesz, 16384);
    ck_assert_int_eq(g.framecnt, 1024);
    /* 1969 + 80 no longer fits 2048 */
    ck_assert_int_eq(
        sampi_dpdk_af_packet_vdev("net_af_packet0", 1969, 1 << 20, 4096, out, sizeof(out), &g), 1);
    ck_assert_int_eq(g.framesz, 4096);
    /* what the vdev sets wins, and bounds the MTU; the rest is derived */
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framesz=2048,iface=x", 9000, 1 << 20,
                                               4096, out, sizeof(out), &g),
                     1);
    ck_assert_str_eq(out, "net_af_packet0,framesz=2048,iface=x,blocksz=4096,framecnt=512");
    ck_assert_int_eq(g.max_mtu, 1968);
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framecnt=100,blocksz=8192", 1500,
                                               1 << 20, 4096, out, sizeof(out), &g),
                     1);
    ck_assert_str_eq(out, "net_af_packet0,framecnt=100,blocksz=8192,framesz=2048");
    /* a ring smaller than a block still gets one block */
    ck_assert_int_eq(
        sampi_dpdk_af_packet_vdev("net_af_packet0", 9000, 100, 4096, out, sizeof(out), &g), 1);
    ck_assert_int_eq(g.framecnt, 1);
    /* what the PMD would accept but misaddress, or refuse: errors here */
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framesz=3008", 1500, 1 << 20, 4096,
                                               out, sizeof(out), &g),
                     1); /* 3008 = 64 * 47 tiles a 47-page block: allowed */
    ck_assert_int_eq(g.blocksz % 3008, 0);
    ck_assert_int_eq(g.blocksz % 4096, 0);
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framesz=3008,blocksz=4096", 1500,
                                               1 << 20, 4096, out, sizeof(out), &g),
                     -EINVAL);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framesz=3000", 1500, 1 << 20, 4096,
                                               out, sizeof(out), &g),
                     -EINVAL); /* not a multiple of TPACKET_ALIGNMENT */
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framecnt=3", 1500, 1 << 20, 4096,
                                               out, sizeof(out), &g),
                     -EINVAL);
    ck_assert_int_eq(sampi_dpdk_af_packet_vdev("net_af_packet0,framesz=big", 1500, 1 << 20, 4096,
                                               out, sizeof(out), &g),
                     -EINVAL);
    ck_assert_int_eq(
        sampi_dpdk_af_packet_vdev("net_af_packet0", 0, 1 << 20, 4096, out, sizeof(out), &g),
        -EINVAL);
    /* another device passes through untouched */
    ck_assert_int_eq(
        sampi_dpdk_af_packet_vdev("net_tap0,iface=t", 9000, 1 << 20, 4096, out, sizeof(out), &g),
        0);
    ck_assert_str_eq(out, "net_tap0,iface=t");
    ck_assert_int_eq(
        sampi_dpdk_af_packet_vdev("net_af_packet0,iface=sd0", 1500, 1 << 20, 4096, out, 30, &g),
        -ENAMETOOLONG);
}
END_TEST

START_TEST(send_checks)
{
    struct sampi_dgram dg = {.rank = 1, .size = 4, .mtu = 1472};
    ck_assert_int_eq(sampi_dgram_check_send(&dg, 0, 0), 0);
    ck_assert_int_eq(sampi_dgram_check_send(&dg, 3, 1472), 0);
    ck_assert_int_eq(sampi_dgram_check_send(&dg, 3, 1473), -EMSGSIZE);
    ck_assert_int_eq(sampi_dgram_check_send(&dg, 1, 10), -EINVAL);
    ck_assert_int_eq(sampi_dgram_check_send(&dg, 4, 10), -EINVAL);
    ck_assert_int_eq(sampi_dgram_check_send(&dg, -1, 10), -EINVAL);
}
END_TEST

START_TEST(backend_table)
{
    char err[1024];
    ck_assert_ptr_null(sampi_dgram_load("nope", err, sizeof(err)));
    ck_assert_msg(strstr(err, "no datagram transport 'nope'"), "%s", err);
    ck_assert_ptr_null(sampi_dgram_load(NULL, NULL, 0));
    int n = 0, udp = 0;
    for (int i = 0; sampi_dgram_names[i]; i++, n++)
        udp += strcmp(sampi_dgram_names[i], "ofi-udp") == 0;
    ck_assert_int_eq(udp, 1);
#ifdef SAMPI_HAVE_DPDK
    ck_assert_str_eq(sampi_dgram_names[0], "dpdk"); /* auto tries it first */
    ck_assert_int_eq(n, 2);
#else
    ck_assert_int_eq(n, 1);
#endif
}
END_TEST

Suite *sampi_dgram_suite(void)
{
    return UNIT_SUITE("dgram",
                      {.name = "pure",
                       UNIT_TESTS(default_command_line, user_arguments_and_escapes, user_lcores_win,
                                  too_long_is_an_error, split_in_place, af_packet_interface,
                                  af_packet_ring_geometry, send_checks, backend_table)});
}
