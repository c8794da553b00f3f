/*
 * model.h - cost-model factors shared by the algorithms' models (algos.h,
 * struct sampi_algo_model), in units of s*beta (s the vector's bytes).
 */
#ifndef SAMPI_MODEL_H
#define SAMPI_MODEL_H

#include "algos.h"

/* A ring's time after the last arrival on n ranks: 2(n-1)/n. */
double sampi_ring_factor(int n);

#endif
