/*
 * mpit.c - SAMPI's variables through the standard MPI_T interface only.
 *
 *   mpit             the checks below (run under mpirun, 2 to 4 ranks)
 *   mpit --registry  print SAMPI's registry ("cvar NAME DEFAULT", "pvar NAME")
 *                    straight from its tables, without MPI, for mpit.test to
 *                    compare with sampi_info's listing
 *
 * Checks: MPI_T works before MPI_Init (SAMPI's category is index 0 and a
 * write made then holds); every cvar, pvar and category, Open MPI's and
 * SAMPI's, survives a name -> index round trip, and category member lists
 * point at the right variables; reads and writes of SAMPI's variables, and
 * invalid writes refused with MPI_T_ERR_INVALID and no change; writing
 * sampi_comm_algorithm on one communicator changes what
 * sampi_comm_algorithm_last reports after its next MPI_Allreduce while another
 * communicator is unaffected; a pvar session with MPI_T_PVAR_ALL_HANDLES
 * start/stop (with an Open MPI handle in the same session), readreset, write
 * and the refusals of read-only variables.  Prints one line per failure and a
 * summary; exits non-zero when any rank failed.
 */
#include "mpit_registry.h"
#include "pvars.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("mpit: [rank %d] FAIL line %d (%s): ", rank, __LINE__, #cond);                  \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fflush(stdout);                                                                        \
        }                                                                                          \
    } while (0)

static int our_cvars, our_pvars; /* from the "sampi" category */

static int registry_listing(void)
{
    for (int i = 0; i < sampi_mpit_num_cvars(); i++) {
        struct sampi_mpit_cvar_doc doc;
        const char *name = sampi_mpit_cvar_name(i);
        sampi_mpit_cvar_doc(name, &doc);
        printf("cvar %s %s\n", name, doc.default_text);
    }
    for (int i = 0; i < SAMPI_PVAR__COUNT; i++)
        printf("pvar %s\n", sampi_pvar_descs[i].name);
    return 0;
}

static int cvar_index(const char *name)
{
    int i = -1;
    int rc = MPI_T_cvar_get_index(name, &i);
    CHECK(rc == MPI_SUCCESS, "MPI_T_cvar_get_index(%s) = %d", name, rc);
    return i;
}

static int pvar_index(const char *name, int var_class)
{
    int i = -1;
    int rc = MPI_T_pvar_get_index(name, var_class, &i);
    CHECK(rc == MPI_SUCCESS, "MPI_T_pvar_get_index(%s) = %d", name, rc);
    return i;
}

/* The value of enum item `item` of cvar `name`'s enum, or -100. */
static int enum_value(const char *cvar, const char *item)
{
    MPI_T_enum e = MPI_T_ENUM_NULL;
    int num = 0;
    MPI_T_cvar_get_info(cvar_index(cvar), NULL, NULL, NULL, NULL, &e, NULL, NULL, NULL, NULL);
    if (e == MPI_T_ENUM_NULL || MPI_T_enum_get_info(e, &num, NULL, NULL) != MPI_SUCCESS)
        return -100;
    for (int i = 0; i < num; i++) {
        char name[64];
        int len = sizeof(name), value;
        if (MPI_T_enum_get_item(e, i, &value, name, &len) == MPI_SUCCESS && strcmp(name, item) == 0)
            return value;
    }
    return -100;
}

static MPI_T_cvar_handle cvar_handle(const char *name, void *obj)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    int count = 0;
    int rc = MPI_T_cvar_handle_alloc(cvar_index(name), obj, &h, &count);
    CHECK(rc == MPI_SUCCESS, "handle for %s: %d", name, rc);
    return h;
}

/* ------------------------------------------------------------ before MPI_Init */

static void before_init(void)
{
    int cat = -1, nc = 0, np = 0;
    CHECK(MPI_T_category_get_index("sampi", &cat) == MPI_SUCCESS && cat == 0, "category %d", cat);
    MPI_T_category_get_info(cat, NULL, NULL, NULL, NULL, &nc, &np, NULL);
    our_cvars = nc;
    our_pvars = np;
    CHECK(nc == sampi_mpit_num_cvars() && np == SAMPI_PVAR__COUNT, "sampi has %d cvars %d pvars",
          nc, np);
    CHECK(cvar_index("sampi_algorithm") == 0, "sampi_algorithm is not index 0");
    MPI_T_cvar_handle h = cvar_handle("sampi_segment_bytes", NULL);
    unsigned long long seg = 512 * 1024;
    CHECK(MPI_T_cvar_write(h, &seg) == MPI_SUCCESS, "write before MPI_Init");
    MPI_T_cvar_handle_free(&h);
}

/* ------------------------------------------------------------ enumeration */

static void round_trips(void)
{
    int num = 0, skipped = 0;
    char name[256];
    CHECK(MPI_T_cvar_get_num(&num) == MPI_SUCCESS, "cvar_get_num");
    for (int i = 0; i < num; i++) {
        int len = sizeof(name), j = -1;
        if (MPI_T_cvar_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL) !=
            MPI_SUCCESS) {
            /* Open MPI counts variables it cannot describe (ompi#11492) */
            CHECK(i >= our_cvars, "cvar %d of SAMPI has no info", i);
            skipped++;
            continue;
        }
        CHECK((strncmp(name, "sampi_", 6) == 0) == (i < our_cvars), "cvar %d is %s", i, name);
        CHECK(MPI_T_cvar_get_index(name, &j) == MPI_SUCCESS && j == i,
              "cvar %d (%s) comes back as %d", i, name, j);
    }
    /* Open MPI answers past its end (its own error code); SAMPI only shifts. */
    CHECK(MPI_T_cvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) !=
              MPI_SUCCESS,
          "cvar index past the end");

    CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS, "pvar_get_num");
    for (int i = 0; i < num; i++) {
        int len = sizeof(name), j = -1, cls = -1;
        if (MPI_T_pvar_get_info(i, name, &len, NULL, &cls, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                NULL) != MPI_SUCCESS) {
            CHECK(i >= our_pvars, "pvar %d of SAMPI has no info", i);
            skipped++;
            continue;
        }
        CHECK((strncmp(name, "sampi_", 6) == 0) == (i < our_pvars), "pvar %d is %s", i, name);
        CHECK(MPI_T_pvar_get_index(name, cls, &j) == MPI_SUCCESS && j == i,
              "pvar %d (%s) comes back as %d", i, name, j);
    }

    int ncv = 0, npv = 0, ncat = 0;
    MPI_T_cvar_get_num(&ncv);
    MPI_T_pvar_get_num(&npv);
    CHECK(MPI_T_category_get_num(&ncat) == MPI_SUCCESS, "category_get_num");
    for (int i = 0; i < ncat; i++) {
        int len = sizeof(name), j = -1, nc = 0, np = 0, nsub = 0;
        if (MPI_T_category_get_info(i, name, &len, NULL, NULL, &nc, &np, &nsub) != MPI_SUCCESS)
            continue;
        CHECK(MPI_T_category_get_index(name, &j) == MPI_SUCCESS && j == i,
              "category %d (%s) comes back as %d", i, name, j);
        int *idx = malloc(((size_t)nc + np + nsub + 1) * sizeof(int));
        MPI_T_category_get_cvars(i, nc, idx);
        for (int k = 0; k < nc; k++)
            CHECK(i == 0 ? idx[k] < our_cvars : idx[k] >= our_cvars && idx[k] < ncv,
                  "category %s lists cvar %d", name, idx[k]);
        MPI_T_category_get_pvars(i, np, idx);
        for (int k = 0; k < np; k++)
            CHECK(i == 0 ? idx[k] < our_pvars : idx[k] >= our_pvars && idx[k] < npv,
                  "category %s lists pvar %d", name, idx[k]);
        MPI_T_category_get_categories(i, nsub, idx);
        for (int k = 0; k < nsub; k++)
            CHECK(idx[k] >= 1 && idx[k] < ncat, "category %s lists category %d", name, idx[k]);
        free(idx);
    }
    if (rank == 0)
        printf("mpit: %d cvars, %d pvars, %d categories (%d of Open MPI's without info)\n", ncv,
               npv, ncat, skipped);
}

/* ------------------------------------------------------------ cvars */

static void read_write(void)
{
    MPI_T_cvar_handle seg = cvar_handle("sampi_segment_bytes", NULL);
    unsigned long long u = 0;
    CHECK(MPI_T_cvar_read(seg, &u) == MPI_SUCCESS && u == 512 * 1024,
          "segment_bytes written before MPI_Init reads %llu", u);
    u = 100;
    CHECK(MPI_T_cvar_write(seg, &u) == MPI_T_ERR_INVALID, "segment_bytes 100 accepted");
    MPI_T_cvar_read(seg, &u);
    CHECK(u == 512 * 1024, "refused write changed segment_bytes to %llu", u);
    MPI_T_cvar_handle_free(&seg);

    MPI_T_cvar_handle algo = cvar_handle("sampi_algorithm", NULL);
    int v = 99;
    CHECK(MPI_T_cvar_write(algo, &v) == MPI_T_ERR_INVALID, "algorithm 99 accepted");
    CHECK(MPI_T_cvar_read(algo, &v) == MPI_SUCCESS && v == enum_value("sampi_algorithm", "auto"),
          "algorithm reads %d", v);
    MPI_T_cvar_handle_free(&algo);

    MPI_T_cvar_handle timeout = cvar_handle("sampi_timeout_ms", NULL);
    v = -1;
    CHECK(MPI_T_cvar_write(timeout, &v) == MPI_T_ERR_INVALID, "timeout -1 accepted");
    v = 30000;
    CHECK(MPI_T_cvar_write(timeout, &v) == MPI_SUCCESS, "timeout 30000 refused");
    CHECK(MPI_T_cvar_read(timeout, &v) == MPI_SUCCESS && v == 30000, "timeout reads %d", v);
    MPI_T_cvar_handle_free(&timeout);

    MPI_T_cvar_handle pin = cvar_handle("sampi_pin", NULL);
    char text[512];
    CHECK(MPI_T_cvar_write(pin, "7-2") == MPI_T_ERR_INVALID, "pin 7-2 accepted");
    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    CHECK(MPI_T_cvar_write(pin, text) == MPI_T_ERR_INVALID, "511-character pin accepted");
    CHECK(MPI_T_cvar_read(pin, text) == MPI_SUCCESS && strcmp(text, "auto") == 0, "pin reads '%s'",
          text);
    MPI_T_cvar_handle_free(&pin);

    MPI_T_cvar_handle h;
    int count;
    CHECK(MPI_T_cvar_handle_alloc(cvar_index("sampi_comm_algorithm"), NULL, &h, &count) !=
              MPI_SUCCESS,
          "comm-bound handle without a communicator");
    CHECK(MPI_T_cvar_handle_alloc(-1, NULL, &h, &count) == MPI_T_ERR_INVALID_INDEX,
          "cvar index -1");
}

/* ------------------------------------------------------------ per communicator */

static int last_algorithm(MPI_T_pvar_session s, MPI_Comm comm)
{
    MPI_T_pvar_handle h;
    int count = 0, v = -100;
    int idx = pvar_index("sampi_comm_algorithm_last", MPI_T_PVAR_CLASS_STATE);
    CHECK(MPI_T_pvar_handle_alloc(s, idx, &comm, &h, &count) == MPI_SUCCESS && count == 1,
          "algorithm_last handle");
    CHECK(MPI_T_pvar_read(s, h, &v) == MPI_SUCCESS, "algorithm_last read");
    MPI_T_pvar_handle_free(s, &h);
    return v;
}

static void allreduce(MPI_Comm comm, int n)
{
    int *buf = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        buf[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, comm);
    int want0 = size * (size - 1) / 2;
    CHECK(buf[0] == want0 && buf[n - 1] == want0 + size * (n - 1), "allreduce result");
    free(buf);
}

static void per_communicator(MPI_Comm c1, MPI_Comm c2, MPI_T_pvar_session s)
{
    const int ring = enum_value("sampi_comm_algorithm", "ring");
    const int rhd = enum_value("sampi_comm_algorithm", "rhd");
    const int native = enum_value("sampi_algorithm", "native");
    CHECK(enum_value("sampi_comm_algorithm", "inherit") == -1, "inherit is not -1");
    MPI_T_cvar_handle h1 = cvar_handle("sampi_comm_algorithm", &c1);
    MPI_T_cvar_handle h2 = cvar_handle("sampi_comm_algorithm", &c2);

    /* 256 ints: 'auto' leaves them to Open MPI */
    CHECK(MPI_T_cvar_write(h1, &ring) == MPI_SUCCESS, "write ring on c1");
    allreduce(c1, 256);
    allreduce(c2, 256);
    CHECK(last_algorithm(s, c1) == ring, "c1 ran %d, not ring", last_algorithm(s, c1));
    CHECK(last_algorithm(s, c2) == native, "c2 ran %d, not native", last_algorithm(s, c2));
    int v = 0;
    CHECK(MPI_T_cvar_read(h2, &v) == MPI_SUCCESS && v == -1, "c2's override reads %d", v);

    CHECK(MPI_T_cvar_write(h1, &rhd) == MPI_SUCCESS, "write rhd on c1");
    allreduce(c1, 256);
    CHECK(last_algorithm(s, c1) == rhd, "c1 ran %d, not rhd", last_algorithm(s, c1));
    v = 99;
    CHECK(MPI_T_cvar_write(h1, &v) == MPI_T_ERR_INVALID, "c1 algorithm 99 accepted");
    CHECK(MPI_T_cvar_read(h1, &v) == MPI_SUCCESS && v == rhd, "refused write changed c1");
    v = -1;
    CHECK(MPI_T_cvar_write(h1, &v) == MPI_SUCCESS, "write inherit on c1");
    allreduce(c1, 256);
    CHECK(last_algorithm(s, c1) == native, "c1 ran %d after inherit", last_algorithm(s, c1));

    /* c1's data path was opened by the ring call: its netdev is fixed now */
    MPI_T_cvar_handle nd = cvar_handle("sampi_comm_netdev", &c1);
    v = enum_value("sampi_comm_netdev", "mpi");
    CHECK(MPI_T_cvar_write(nd, &v) == MPI_T_ERR_CVAR_SET_NOT_NOW, "netdev after first use");
    MPI_T_cvar_handle_free(&nd);
    MPI_T_cvar_handle_free(&h1);
    MPI_T_cvar_handle_free(&h2);
}

/* ------------------------------------------------------------ sessions */

static void sessions(MPI_Comm c2)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle calls, proc, peers, last, native = MPI_T_PVAR_HANDLE_NULL;
    int count = 0, ncalls = 0;
    const int nat = enum_value("sampi_algorithm", "native");
    /* the counters are under test, not auto's choice (which explores): every
     * call on c2 runs native */
    MPI_T_cvar_handle force = cvar_handle("sampi_comm_algorithm", &c2);
    CHECK(MPI_T_cvar_write(force, &nat) == MPI_SUCCESS, "force native on c2");
    MPI_T_cvar_handle_free(&force);
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS, "session");
    CHECK(MPI_T_pvar_handle_alloc(s, pvar_index("sampi_comm_calls", MPI_T_PVAR_CLASS_COUNTER), &c2,
                                  &calls, &ncalls) == MPI_SUCCESS,
          "comm_calls handle");
    CHECK(MPI_T_pvar_handle_alloc(s, pvar_index("sampi_calls", MPI_T_PVAR_CLASS_COUNTER), NULL,
                                  &proc, &count) == MPI_SUCCESS &&
              count == ncalls,
          "calls handle");
    CHECK(MPI_T_pvar_handle_alloc(
              s, pvar_index("sampi_comm_peer_late_count", MPI_T_PVAR_CLASS_COUNTER), &c2, &peers,
              &count) == MPI_SUCCESS &&
              count == size,
          "peer_late_count has %d elements on %d ranks", count, size);
    CHECK(MPI_T_pvar_handle_alloc(s,
                                  pvar_index("sampi_comm_algorithm_last", MPI_T_PVAR_CLASS_STATE),
                                  &c2, &last, &count) == MPI_SUCCESS,
          "algorithm_last handle");
    /* An Open MPI handle in the same session must keep working alongside. */
    int nidx = -1, have_native = 0;
    if (MPI_T_pvar_get_index("pml_ob1_unexpected_msgq_length", MPI_T_PVAR_CLASS_SIZE, &nidx) ==
        MPI_SUCCESS)
        have_native = MPI_T_pvar_handle_alloc(s, nidx, &c2, &native, &count) == MPI_SUCCESS;

    unsigned long long v[64] = {0}, p[64] = {0};
    allreduce(c2, 16);
    CHECK(MPI_T_pvar_read(s, calls, v) == MPI_SUCCESS && v[nat] == 0,
          "counted %llu calls before start", v[nat]);
    CHECK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "start ALL_HANDLES");
    for (int i = 0; i < 3; i++)
        allreduce(c2, 16);
    CHECK(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "stop ALL_HANDLES");
    allreduce(c2, 16);
    CHECK(MPI_T_pvar_read(s, calls, v) == MPI_SUCCESS && v[nat] == 3,
          "comm_calls[native] = %llu, not 3", v[nat]);
    CHECK(MPI_T_pvar_read(s, proc, p) == MPI_SUCCESS && p[nat] == 3, "calls[native] = %llu, not 3",
          p[nat]);
    if (have_native) {
        unsigned long long q = 0;
        CHECK(MPI_T_pvar_read(s, native, &q) == MPI_SUCCESS, "Open MPI pvar read");
    }
    CHECK(MPI_T_pvar_readreset(s, calls, v) == MPI_SUCCESS && v[nat] == 3, "readreset %llu",
          v[nat]);
    CHECK(MPI_T_pvar_read(s, calls, v) == MPI_SUCCESS && v[nat] == 0, "after readreset %llu",
          v[nat]);
    for (int i = 0; i < ncalls; i++)
        v[i] = 5;
    CHECK(MPI_T_pvar_write(s, calls, v) == MPI_SUCCESS, "write counter");
    CHECK(MPI_T_pvar_read(s, calls, v) == MPI_SUCCESS && v[nat] == 5, "wrote 5, read %llu", v[nat]);
    CHECK(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "reset ALL_HANDLES");
    CHECK(MPI_T_pvar_read(s, calls, v) == MPI_SUCCESS && v[nat] == 0, "after reset %llu", v[nat]);
    CHECK(MPI_T_pvar_read(s, peers, v) == MPI_SUCCESS, "peer_late_count read");

    int a = 0;
    CHECK(MPI_T_pvar_start(s, last) == MPI_T_ERR_PVAR_NO_STARTSTOP, "start a continuous pvar");
    CHECK(MPI_T_pvar_write(s, last, &a) == MPI_T_ERR_PVAR_NO_WRITE, "write a readonly pvar");
    CHECK(MPI_T_pvar_readreset(s, last, &a) == MPI_T_ERR_PVAR_NO_WRITE,
          "readreset a readonly pvar");
    CHECK(MPI_T_pvar_read(s, last, &a) == MPI_SUCCESS && a == nat, "last algorithm %d", a);
    CHECK(MPI_T_pvar_handle_alloc(s, our_pvars + 100000, NULL, &last, &count) != MPI_SUCCESS,
          "pvar index past the end");

    if (have_native)
        MPI_T_pvar_handle_free(s, &native);
    MPI_T_pvar_handle_free(s, &calls);
    CHECK(calls == MPI_T_PVAR_HANDLE_NULL, "freed handle not nulled");
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS, "session free");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--registry") == 0)
        return registry_listing();
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        printf("mpit: MPI_T_init_thread failed\n");
        return 1;
    }
    before_init();
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    round_trips();
    read_write();

    MPI_Comm c1, c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    MPI_T_pvar_session s;
    MPI_T_pvar_session_create(&s);
    per_communicator(c1, c2, s);
    MPI_T_pvar_session_free(&s);
    sessions(c2);
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);

    int totals[2] = {checks, failures};
    PMPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpit: np=%d, %d checks, %d failed\n", size, totals[0], totals[1]);
    /* MPI_T first: Open MPI 4.1 crashes in MPI_T_finalize after MPI_Finalize. */
    MPI_T_finalize();
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
