"""The damped oscillator and a multi-start least-squares fit of it."""

import numpy as np
from scipy.optimize import curve_fit


def damped(t, amplitude, tau, omega, phi):
    return amplitude * np.exp(-t / tau) * np.cos(omega * t + phi)


def simulate(truth, samples, duration, noise, seed):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, duration, samples)
    return t, damped(t, **truth) + rng.normal(scale=noise, size=samples)


def fit(t, x, restarts, seed):
    """Best of several curve_fit runs from random starting points."""
    rng = np.random.default_rng(seed)
    best, best_cost = None, np.Inf
    for _ in range(restarts):
        p0 = [rng.uniform(0.5, 3.0), rng.uniform(0.5, 5.0), rng.uniform(1.0, 6.0), rng.uniform(-1, 1)]
        try:
            params, _ = curve_fit(damped, t, x, p0=p0, maxfev=5000)
        except RuntimeError:
            continue
        cost = float(np.sum((damped(t, *params) - x) ** 2))
        if cost < best_cost:
            best, best_cost = params, cost
    if best is None:
        raise RuntimeError("no restart converged")
    return dict(zip(("amplitude", "tau", "omega", "phi"), map(float, best))), best_cost
