"""conda create --prefix PREFIX SPEC... against CHANNEL, done by py-rattler (a
conda-compatible installer: solve, fetch, link, conda-meta written as conda writes it).

Usage: python3 make_env.py CHANNEL PREFIX SPEC...
"""

import asyncio
import os
import sys


async def main(channel, prefix, *specs):
    from rattler import install, solve

    records = await solve(sources=[channel], specs=list(specs),
                          platforms=["linux-64", "noarch"])
    await install(records, target_prefix=prefix, cache_dir="/tmp/rattler-cache",
                  show_progress=False)
    print("linked", ", ".join(sorted(r.name.normalized for r in records)), "into", prefix)


asyncio.run(main(*sys.argv[1:]))
sys.stdout.flush()
os._exit(0)  # py-rattler 0.28 can crash at interpreter exit after the work is done
