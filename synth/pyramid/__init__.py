"""The verification pyramid: levels C0-C5, probe scripts, results, and the runner."""
