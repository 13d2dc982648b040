"""Scripts synth runs inside a container; stdlib-only, for any Python >= 3.8."""
