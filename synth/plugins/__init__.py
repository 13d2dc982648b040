"""Plug-ins: code that extends synth for one benchmark or ecosystem. The core never imports
them; each registers itself through the ``synth.plugins`` entry point group
(:mod:`synth.profiles`)."""
