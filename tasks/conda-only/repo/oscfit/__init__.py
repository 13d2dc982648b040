"""oscfit: fit a damped oscillator to noisy samples, keep the results, draw the pipeline."""
