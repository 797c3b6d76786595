"""Gaussian expectations E f(G), G ~ N(m, Σ), on fixed nodes.

A rule is a set of standard-normal nodes z_w ∈ R^r with weights w (Σ w = 1). For G = m + A z with
A Aᵀ = Σ (rank r), E f(G) ≈ Σ_w w f(m + A z_w). Two rules:

- tensor-product Gauss–Hermite (probabilists'), exact for polynomials of degree ≤ 2·order − 1 in
  each coordinate; used when order^r stays within the node budget;
- scrambled Sobol quasi-Monte-Carlo mapped through Φ⁻¹, with fixed nodes (a fixed seed), so the
  estimate is a smooth deterministic function of (m, Σ): common random numbers for gradients and
  ODE right-hand sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.stats import norm, qmc

MIN_GH_ORDER = 8


@dataclass(frozen=True)
class Rule:
    nodes: np.ndarray  # (n, r) standard-normal nodes
    weights: np.ndarray  # (n,), summing to 1
    kind: str  # "gauss-hermite" or "qmc"


def gauss_hermite(dim: int, order: int) -> Rule:
    """Tensor-product probabilists' Gauss–Hermite rule with ``order`` nodes per axis."""
    x, w = hermegauss(order)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    nodes = np.stack([g.reshape(-1) for g in grids], axis=1)
    weights = np.prod(np.stack([g.reshape(-1) for g in wgrids], axis=1), axis=1)
    return Rule(nodes, weights, "gauss-hermite")


def sobol(dim: int, log2_n: int = 16, seed: int = 0) -> Rule:
    """2^log2_n scrambled Sobol points mapped to N(0, I_dim), equal weights."""
    u = qmc.Sobol(dim, scramble=True, seed=seed).random_base2(log2_n)
    z = norm.ppf(np.clip(u, 1e-12, 1 - 1e-12))
    return Rule(z, np.full(len(z), 1.0 / len(z)), "qmc")


def antithetic(rule: Rule) -> Rule:
    """The rule with every node's mirror image −ξ added (weights halved): exact for every odd
    integrand, so the odd part of f no longer adds quadrature error to E f and the even part none
    to E f·(odd weight), e.g. an Edgeworth term's Hermite weight (Owen 2013, §8.2;
    docs/references.md). A
    Gauss–Hermite rule is already symmetric and is returned as it is."""
    if rule.kind == "gauss-hermite":
        return rule
    nodes = np.concatenate([rule.nodes, -rule.nodes])
    return Rule(nodes, np.concatenate([rule.weights, rule.weights]) / 2.0, rule.kind)


def rule_for(dim: int, max_nodes: int = 1 << 16, order: int = 20, log2_n: int = 16) -> Rule:
    """Gauss–Hermite with the largest order ≤ ``order`` that fits ``max_nodes`` if that order is at
    least 8 per axis, else Sobol QMC with 2^log2_n nodes."""
    fit = int(np.floor(max_nodes ** (1.0 / dim) + 1e-9)) if dim > 0 else order
    gh_order = min(order, fit)
    if gh_order >= MIN_GH_ORDER:
        return gauss_hermite(dim, gh_order)
    return sobol(dim, log2_n)


def psd_factor(cov, rank: int, xp=np):
    """A (n × rank) with A Aᵀ = cov for a PSD ``cov`` of rank ≤ ``rank`` (top eigenpairs;
    negative round-off eigenvalues are clipped). ``xp`` is numpy or jax.numpy."""
    vals, vecs = xp.linalg.eigh(cov)
    vals = xp.clip(vals[-rank:], 0.0, None)
    return vecs[:, -rank:] * xp.sqrt(vals)[None, :]
