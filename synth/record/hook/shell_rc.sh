# rc file of the audited interactive shell (`synth run --agent shell`): the usual start-up
# files, then the audit hook (interactive bash does not read BASH_ENV).
if [[ -f /etc/bash.bashrc ]]; then . /etc/bash.bashrc; fi
if [[ -f "$HOME/.bashrc" ]]; then . "$HOME/.bashrc"; fi
PS1='(synth) \w \$ '
if [[ -n "${SYNTH_AUDIT_HOOK:-}" ]]; then . "$SYNTH_AUDIT_HOOK"; fi
