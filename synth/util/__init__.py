"""Small, dependency-free helpers every folder may use: atomic writes, safe tar
extraction, cheap frozen records, and the paths that are noise in a container's diff."""
