"""Small, dependency-free helpers every folder may use: atomic writes, safe tar
extraction, cheap frozen records, the paths that are noise in a container's diff, and the
shell lexer (audited lines and transcripts), the wrappers a command runs under."""
