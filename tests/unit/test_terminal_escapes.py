"""No text from an agent or an input file reaches the terminal able to act on it: the CLI's
human outputs are walked with names, commands, paths and values full of escape sequences
and control characters (synth.util.text.printable, used by every output of synth.ui.console)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synth.util.text import json_safe, printable, without_ansi
from tests.distill_runs import cmd, dist, make_run_dir, system_python, venv
from tests.fuzz_inputs import offline_locker, run_cli

#: Clear the screen, retitle the window, an 8-bit CSI, a right-to-left override, a carriage
#: return and a backspace (each rewrites what was shown), a bell, a DEL.
EVIL = "\x1b[2J\x1b]0;pwned\x07\x9b31m\u202e\r\x08\x7f"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\x08", "\x7f")


def test_printable_escapes_what_a_terminal_acts_on() -> None:
    assert printable(EVIL) == ("\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\u202e\\x0d\\x08\\x7f")
    assert printable("a\nb\tc") == "a\nb\tc"
    assert printable("a\nb", newlines=False) == "a\\nb"
    assert without_ansi("\x1b[31mred\x1b[0m \x1b]0;t\x07x\x1b[2J") == "red x"
    doc = json.dumps({"k": "\x9b\u202e\x7f"}, ensure_ascii=False)
    assert json.loads(json_safe(doc)) == {"k": "\x9b\u202e\x7f"}
    assert not any(c in json_safe(doc) for c in RAW)


def _world(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / f"art{EVIL}"
    task_dir = root / "tasks" / "demo"
    (task_dir / "repo").mkdir(parents=True)
    (task_dir / "task.toml").write_text(
        'name = "demo"\ndescription = "' + json.dumps(EVIL)[1:-1] + '"\n'
        'base_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[not_applicable]\nC1 = "x"\nC3 = "x"\nC4 = "x"\n')
    bad = root / "tasks" / "bad"
    bad.mkdir()
    (bad / "task.toml").write_text('name = "' + json.dumps("bad" + EVIL)[1:-1] + '"\n')
    runs = []
    for n, value in enumerate((EVIL, EVIL + "2")):
        py = [system_python(), venv(dists=[dist("pip", "23.0.1"), dist(f"evil{n}", "1.0")])]
        runs.append(make_run_dir(
            root / f"w{n}", [cmd(f"echo '{value}' > '/root/f{value}'"),
                             cmd(f"/opt/venv/bin/pip install 'evil{n}'",
                                 hooks=[(f"/opt/venv/bin/pip install evil{n}", 0)])],
            task="demo", run_id=f"20261129-10150{n}-a1b2c3", python=py,
            task_file=task_dir / "task.toml", diff=[("A", f"/root/f{value}")],
            env={"EVIL": value}, claims={"python_path": f"/p{value}", "torch_version": value}))
    return {"root": root, "task": task_dir, "bad": bad, "a": runs[0], "b": runs[1]}


def _commands(w: dict[str, Path]) -> list[list[str]]:
    art = w["root"] / "out"
    return [
        ["task", "check", str(w["task"]), str(w["bad"])],
        ["runs", "list", "--artifacts", str(w["root"] / "w0")],
        ["runs", "show", str(w["a"])],
        ["export", "--run", str(w["a"]), "-o", str(art)],
        ["export", "--run", str(w["a"]), "-o", str(art)],  # refused: names the folder
        ["export", "--run", str(w["a"]), "--plan"],
        ["diff", str(w["a"]), str(w["b"])],
        ["diff", str(w["a"]), str(w["b"]), "--md"],
        ["diff", str(w["a"]), str(art)],
        ["verify", str(art)],  # an artifact without --rebuild: an error naming it
        ["runs", "show", str(w["root"] / f"nothing{EVIL}")],
    ]


@pytest.mark.parametrize("json_mode", [False, True])
def test_no_cli_output_carries_a_raw_control_character(tmp_path: Path,
                                                       json_mode: bool) -> None:
    w = _world(tmp_path)
    seen = 0
    with offline_locker():
        for argv in _commands(w):
            code, out, err = run_cli(*argv, *(["--json"] if json_mode else []))
            text = out + err
            raw = sorted({repr(c) for c in RAW if c in text})
            assert not raw, (argv, code, raw, text[:2000])
            seen += ("\\x1b" in text) or ("\\u001b" in text)
            if json_mode and out.strip() and argv[-1] != "--plan":
                json.loads(out)
    assert seen >= 6  # the escapes were there to be shown, escaped
