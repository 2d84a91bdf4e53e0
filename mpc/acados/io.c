/* Whole-horizon reads and writes of an acados OCP solver in one call each (the Python
 * interface costs ~8 us per stage and field; these loops cost well under 1 us per stage).
 * Compiled and loaded by mpc/acados/io.py. */
#include "acados_c/ocp_nlp_interface.h"

/* xs: (N+1) x nx row-major, us: N x nu row-major */
void legmpc_get_xu(ocp_nlp_config *c, ocp_nlp_dims *d, ocp_nlp_out *o, int N, int nx, int nu,
                   double *xs, double *us)
{
    for (int k = 0; k <= N; k++) ocp_nlp_out_get(c, d, o, k, "x", xs + k * nx);
    for (int k = 0; k < N; k++) ocp_nlp_out_get(c, d, o, k, "u", us + k * nu);
}

void legmpc_set_xu(ocp_nlp_config *c, ocp_nlp_dims *d, ocp_nlp_out *o, int N, int nx, int nu,
                   double *xs, double *us)
{
    for (int k = 0; k <= N; k++) ocp_nlp_out_set(c, d, o, k, "x", xs + k * nx);
    for (int k = 0; k < N; k++) ocp_nlp_out_set(c, d, o, k, "u", us + k * nu);
}

/* the warm start of the next tick: stage k gets row k + 1 of xs / us (k < N, resp. N - 1);
 * the last stage repeats the last row, its last state entry (the clock) advanced by dt */
void legmpc_set_xu_shifted(ocp_nlp_config *c, ocp_nlp_dims *d, ocp_nlp_out *o, int N, int nx, int nu,
                           double *xs, double *us, double dt)
{
    double last[nx];
    for (int k = 0; k < N; k++) ocp_nlp_out_set(c, d, o, k, "x", xs + (k + 1) * nx);
    for (int i = 0; i < nx; i++) last[i] = xs[N * nx + i];
    last[nx - 1] += dt;
    ocp_nlp_out_set(c, d, o, N, "x", last);
    for (int k = 0; k < N - 1; k++) ocp_nlp_out_set(c, d, o, k, "u", us + (k + 1) * nu);
    ocp_nlp_out_set(c, d, o, N - 1, "u", us + (N - 1) * nu);
}

/* shift the solver's own iterate one stage earlier, through the buffers xs, us (which end up
 * holding the iterate before the shift), as legmpc_set_xu_shifted does */
void legmpc_shift(ocp_nlp_config *c, ocp_nlp_dims *d, ocp_nlp_out *o, int N, int nx, int nu,
                  double *xs, double *us, double dt)
{
    legmpc_get_xu(c, d, o, N, nx, nu, xs, us);
    legmpc_set_xu_shifted(c, d, o, N, nx, nu, xs, us, dt);
}

/* fix the initial state: lbx = ubx = x0 at stage 0 */
void legmpc_set_x0(ocp_nlp_config *c, ocp_nlp_dims *d, ocp_nlp_in *in, double *x0)
{
    ocp_nlp_constraints_model_set(c, d, in, 0, "lbx", x0);
    ocp_nlp_constraints_model_set(c, d, in, 0, "ubx", x0);
}

/* out: time_tot, time_lin, time_qp, time_sim, time_reg (s), sqp_iter, then the QP iterations
 * summed over the SQP iterations (row `qp_row` of acados's statistics table: 2 for SQP_RTI,
 * 6 for SQP; the table is (stat_n + 1) x min(stat_m, sqp_iter + 1), row-major) */
void legmpc_stats(ocp_nlp_config *c, ocp_nlp_solver *s, int qp_row, double *out)
{
    static const char *names[5] = {"time_tot", "time_lin", "time_qp", "time_sim", "time_reg"};
    for (int i = 0; i < 5; i++) ocp_nlp_get(c, s, names[i], out + i);
    int it = 0, stat_m = 0, stat_n = 0;
    ocp_nlp_get(c, s, "sqp_iter", &it);
    ocp_nlp_get(c, s, "stat_m", &stat_m);
    ocp_nlp_get(c, s, "stat_n", &stat_n);
    out[5] = (double)it;
    int cols = stat_m < it + 1 ? stat_m : it + 1;
    double qp = 0.0;
    if (cols > 0 && stat_n >= qp_row) {
        double table[(stat_n + 1) * cols];
        ocp_nlp_get(c, s, "statistics", table);
        for (int j = 0; j < cols; j++) qp += table[qp_row * cols + j];
    }
    out[6] = qp;
}

/* One real-time-iteration phase in one call: optionally fix x0 (NULL: keep), set rti_phase
 * (1 preparation, 2 feedback), solve, fill `stats` as legmpc_stats does, and optionally
 * (xs not NULL) read the iterate into xs, us as legmpc_get_xu does. Returns the acados status. */
int legmpc_rti_phase(ocp_nlp_config *c, ocp_nlp_dims *d, void *opts, ocp_nlp_solver *s,
                     ocp_nlp_in *in, ocp_nlp_out *out, int phase, double *x0, int qp_row, double *stats,
                     int N, int nx, int nu, double *xs, double *us)
{
    if (x0) legmpc_set_x0(c, d, in, x0);
    ocp_nlp_solver_opts_set(c, opts, "rti_phase", &phase);
    int status = ocp_nlp_solve(s, in, out);
    legmpc_stats(c, s, qp_row, stats);
    if (xs) legmpc_get_xu(c, d, out, N, nx, nu, xs, us);
    return status;
}
