/*
 * optcc_model.h - OptCC's cost model (its row's model in algos.def).
 */
#ifndef SAMPI_OPTCC_MODEL_H
#define SAMPI_OPTCC_MODEL_H

/* OptCC's time over the fault-free ring time T0 = 2(p-1)/p n beta for one
 * rank slowed down l times, k segments (the paper's eq. (1)/(2),
 * Sec. 4.3): l (k+1)/k / T0 for l >= 2, and with bubble filling
 * 2(p-1)l/((p-2)l+2) (k+l-1)/k / T0 below.  A ring through the slow rank
 * takes l T0.  INFINITY when it cannot run (p < 3, l < 1, k < 1). */
double sampi_optcc_model_ratio(int p, double l, int k);

/* Theorem 6's lower bound over T0: pl/((p-2)l+2) for l <= 2, lp/(2(p-1))
 * above. */
double sampi_optcc_lower_bound_ratio(int p, double l);

#endif
