/* legmpc_client.h: a controller's side of the plant <-> controller wire protocol
 * (docs/PROTOCOL.md, "A client in C") in C11 over libzmq.
 *
 *     legmpc_client *c = legmpc_new();
 *     legmpc_options o = {0};  o.robot = "go1";          // zero = defaults
 *     if (legmpc_connect(c, "tcp://127.0.0.1:5555", &o) != LEGMPC_OK) fail(legmpc_errmsg(c));
 *     const legmpc_config *cfg = legmpc_config_get(c);   // CONFIG: nq, nv, nu, q0, ...
 *     legmpc_state s;  legmpc_state_alloc(c, &s);        // caller-owned arrays, once
 *     for (;;) {
 *         int ev = legmpc_recv(c, &s, 5000);             // the newest STATE, or ERROR, or BYE
 *         if (ev == LEGMPC_EV_STATE) legmpc_send_command(c, s.tick, s.t, &cmd);
 *         else if (ev == LEGMPC_EV_ERROR) report(legmpc_plant_error(c)->reason);
 *         else if (ev == LEGMPC_EV_BYE) break;           // legmpc_bye_reason(c)
 *         else fail(legmpc_errmsg(c));                   // ev < 0: a LEGMPC_E_* code
 *     }
 *     legmpc_state_free(&s);  legmpc_close(c);
 *
 * Every function returns a code and leaves a message in legmpc_errmsg(c); none aborts or
 * prints. After legmpc_connect, receiving and sending allocate nothing. One client is used
 * by one thread at a time.
 */
#ifndef LEGMPC_CLIENT_H
#define LEGMPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The protocol version this client speaks (header and HELLO); tests/test_c_client.py keeps
 * it equal to bridge/protocol.py's VERSION. */
#define LEGMPC_PROTOCOL_VERSION 3

/* What legmpc_recv returns (> 0) */
enum legmpc_event {
    LEGMPC_EV_STATE = 1, /* the newest STATE is in the caller's legmpc_state */
    LEGMPC_EV_ERROR = 2, /* an ERROR: legmpc_plant_error(c) */
    LEGMPC_EV_BYE = 3    /* the run ended: legmpc_bye_reason(c); every later call returns it again */
};

/* Failures (< 0); legmpc_errmsg(c) says what, legmpc_code_name(code) names the code */
enum legmpc_code {
    LEGMPC_OK = 0,
    LEGMPC_E_ARGUMENT = -1, /* a NULL or out-of-range argument, or a call in the wrong order */
    LEGMPC_E_MEMORY = -2,   /* out of memory (at connect only) */
    LEGMPC_E_ZMQ = -3,      /* a libzmq call failed (e.g. a bad endpoint, a full send queue) */
    LEGMPC_E_KEYS = -4,     /* CurveZMQ keys missing, unreadable, or libzmq without CURVE */
    LEGMPC_E_TIMEOUT = -5,  /* nothing from the plant within the timeout */
    LEGMPC_E_REFUSED = -6,  /* the plant refused HELLO: legmpc_plant_error(c) has its ERROR */
    LEGMPC_E_PROTOCOL = -7, /* the plant's reply to HELLO broke the protocol (e.g. another version) */
    LEGMPC_E_CONFIG = -8,   /* CONFIG unreadable or inconsistent */
    LEGMPC_E_ENDED = -9     /* BYE instead of CONFIG, or a send after BYE */
};

/* Message type ids (docs/PROTOCOL.md) */
enum legmpc_msg_type {
    LEGMPC_MSG_HELLO = 1, LEGMPC_MSG_CONFIG = 2, LEGMPC_MSG_STATE = 3, LEGMPC_MSG_COMMAND = 4,
    LEGMPC_MSG_PLAN = 5, LEGMPC_MSG_ERROR = 6, LEGMPC_MSG_BYE = 7
};

/* STATE's status: how the plant applied the tick before this STATE */
enum legmpc_status { LEGMPC_STATUS_OK = 0, LEGMPC_STATUS_HOLD = 1, LEGMPC_STATUS_DAMP = 2, LEGMPC_STATUS_VIOLATION = 3,
                     LEGMPC_STATUS_PLAN = 4 /* a missed tick followed the last COMMAND's horizon */ };

typedef struct legmpc_client legmpc_client; /* opaque */

/* Connection options; all-zero is the default. CurveZMQ: either curve_dir (a folder made by
 * `python -m launch keys DIR`: DIR/server.key, DIR/client.key_secret, as bridge/client.py
 * reads it) or the three Z85 keys (40 characters each); neither: no encryption. */
typedef struct legmpc_options {
    const char *name;        /* HELLO's name, for the plant's logs (NULL: "legmpc-c") */
    const char *robot;       /* HELLO's robot: the plant refuses another robot (NULL: any) */
    const char *curve_dir;
    const char *server_key;  /* the plant's public key */
    const char *public_key;  /* this controller's key pair */
    const char *secret_key;
    int connect_timeout_ms;  /* wait this long for CONFIG (0: 60000, the plant may be compiling) */
} legmpc_options;

/* CONFIG. Arrays and names belong to the client (valid until legmpc_close). */
typedef struct legmpc_config {
    int protocol;
    char robot[64];
    int nq, nv, nu, nc, nf;         /* nf: force columns per contact, 2 (planar) or 3 (3D) */
    int floating_base;              /* 1: q = (xyz, quaternion xyzw, joints), v's base part in the base frame */
    char mode[16];                  /* "lockstep" or "realtime" */
    double control_rate_hz, plant_rate_hz;
    double deadline_s;              /* realtime: COMMAND(k) must arrive within this of STATE(k) */
    int hold_ticks;
    double safe_kp, damping_kd;     /* the plant's safe command */
    int *q_index, *v_index;         /* [nu]: where actuator j's joint is in q and in v */
    double *u_max;                  /* [nu] torque limits */
    double *q0;                     /* [nq] the robot's nominal configuration */
    const char **q_names;           /* [nq] */
    const char **u_names;           /* [nu] */
    const char **contacts;          /* [nc] */
    char quaternion_order[8];       /* "xyzw" for a floating base, else "" */
    char base_velocity_frame[8];    /* "base" for a floating base, else "" */
    void *storage_;                 /* private */
} legmpc_config;

/* One STATE. The arrays are the caller's (legmpc_state_alloc makes them, or point them at
 * arrays of the right size; a NULL array is not filled). */
typedef struct legmpc_state {
    uint32_t tick;      /* k: answer with legmpc_send_command(c, tick, t, ...) */
    double t;           /* simulated time, s */
    int64_t wall_ns;    /* the plant's clock (CLOCK_MONOTONIC, ns) when it sent the STATE */
    double *q;          /* [nq] */
    double *v;          /* [nv] */
    uint8_t *contact;   /* [nc] 0/1 */
    double *force;      /* [nc * nf], row-major: normal, x(, y) per contact, N */
    uint8_t status;     /* enum legmpc_status */
    uint32_t skipped;   /* older STATEs that were queued behind this one and dropped (a stall) */
} legmpc_state;

/* One COMMAND: arrays of nu numbers; a NULL array is sent as zeros. */
typedef struct legmpc_command {
    const double *tau_ff, *q_des, *v_des, *kp, *kd;
    int64_t valid_until;  /* the last tick the plant may hold it; -1: its hold_ticks */
} legmpc_command;

/* An ERROR from the plant (or, local = 1, a message of the plant this client refused).
 * answers_*: the plant answers refused messages in the order it read them (docs/PROTOCOL.md,
 * Errors), so the client matches each ERROR to the oldest of its HELLO and COMMANDs that the
 * plant has neither accepted (STATE(k+1) with status ok accepts COMMAND(k)) nor answered. */
typedef struct legmpc_error {
    char reason[32];      /* docs/PROTOCOL.md's reason: "sequence", "value", "non_finite", ... */
    char detail[256];     /* truncated if longer */
    uint32_t tick;        /* the plant's tick when it refused (ERROR's sequence number) */
    int answers_type;     /* the message of ours it answers (enum legmpc_msg_type; 0: unknown) */
    uint32_t answers_seq; /* and its sequence number (a COMMAND's tick) */
    int local;            /* 1: not from the plant; a malformed plant message dropped here */
} legmpc_error;

typedef struct legmpc_stats {
    uint64_t states;      /* STATEs received (delivered or skipped) */
    uint64_t skipped;     /* STATEs dropped because a newer one was queued */
    uint64_t commands;    /* COMMANDs sent */
    uint64_t errors;      /* ERRORs from the plant */
    uint64_t local_errors;/* malformed plant messages dropped */
} legmpc_stats;

legmpc_client *legmpc_new(void); /* NULL only when out of memory */
void legmpc_close(legmpc_client *c); /* closes the socket, frees everything; NULL is fine */

/* Connect to a plant (tcp://HOST:PORT or ipc://PATH), send HELLO, wait for CONFIG and
 * allocate every buffer. Once per client. LEGMPC_OK or a LEGMPC_E_* code. */
int legmpc_connect(legmpc_client *c, const char *endpoint, const legmpc_options *opts);
const legmpc_config *legmpc_config_get(const legmpc_client *c); /* NULL before CONFIG */

/* Allocate (calloc) the state's arrays for the connected robot; legmpc_state_free frees them. */
int legmpc_state_alloc(legmpc_client *c, legmpc_state *s);
void legmpc_state_free(legmpc_state *s);

/* Wait up to timeout_ms (-1: forever, 0: no wait) for the plant, then read everything queued
 * without blocking: the newest STATE goes into s (older ones are dropped and counted in
 * s->skipped), ERRORs are returned first, one per call, then the STATE. Returns an event
 * (LEGMPC_EV_*) or a failure (LEGMPC_E_TIMEOUT, LEGMPC_E_ZMQ, LEGMPC_E_ARGUMENT). */
int legmpc_recv(legmpc_client *c, legmpc_state *s, int timeout_ms);

/* Send COMMAND for tick `tick` (the STATE's), time t (informational): one setpoint (K = 1) and
 * a report of this thread's CPU and wall time since the STATE was delivered. Values are sent as
 * given: the plant is the judge (ERROR non_finite / value); legmpc_check_command says
 * beforehand what it would refuse. */
int legmpc_send_command(legmpc_client *c, uint32_t tick, double t, const legmpc_command *cmd);

/* NULL if the plant would accept cmd's values, else the reason it would give ("non_finite",
 * "value"). */
const char *legmpc_check_command(const legmpc_client *c, const legmpc_command *cmd);

/* Send PLAN (visualisation only): t[n], x[n * (nq + nv)], u[n * nu], row-major. A PLAN the
 * plant would refuse (a NaN or inf, a frame over 1 MiB) is not sent: LEGMPC_E_ARGUMENT. */
int legmpc_send_plan(legmpc_client *c, uint32_t n, const double *t, const double *x, const double *u);

const legmpc_error *legmpc_plant_error(const legmpc_client *c); /* the last ERROR event's */
const char *legmpc_bye_reason(const legmpc_client *c);          /* "" before BYE */
const char *legmpc_errmsg(const legmpc_client *c);              /* the last failure's message */
const char *legmpc_code_name(int code);                         /* "LEGMPC_E_TIMEOUT", ... */
void legmpc_get_stats(const legmpc_client *c, legmpc_stats *out);

/* The strict CONFIG reader legmpc_connect uses (public for tests and tools): parse `len`
 * bytes of JSON into cfg (whose arrays it allocates; free them with legmpc_config_release).
 * Returns 0, or -1 with "reason: detail" in err (reason json, field or version). */
int legmpc_config_parse(const char *json, size_t len, legmpc_config *cfg, char *err, size_t errlen);
void legmpc_config_release(legmpc_config *cfg);

#ifdef __cplusplus
}
#endif
#endif /* LEGMPC_CLIENT_H */
