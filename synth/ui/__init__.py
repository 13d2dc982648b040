"""What a person sees: messages on the terminal, the ``--json`` envelope, tables.

In: typed outcomes of the other folders (a run list, a verify outcome). Out: text on
stderr/stdout, printed literally (untrusted text never becomes markup). Nothing here
decides anything; every command's work happens in the folder that owns it.
"""
