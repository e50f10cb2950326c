"""The simple commands of a shell string (``sh -c "make && rm -rf build"``), roughly.

Enough for the command policy to see a known destructive form inside inline shell code; not
a shell parser: expansions, functions and quoting tricks can always hide a command, which is
why a shell string still counts as code the sandbox has to contain.
"""

from __future__ import annotations

import shlex

_SEPARATORS = frozenset({";", ";;", "&", "&&", "|", "||", "|&", "(", ")", "{", "}", "!"})
_REDIRECTS = frozenset({"<", ">", ">>", "<<", "<<<", "<>", ">|", "&>", "&>>", ">&", "<&"})
# Words that start a compound command and are followed by another command.
_PREFIX_WORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "time"})
# Words after which the rest of the simple command is no command (for x in a b; case x in).
_SKIP_WORDS = frozenset({"for", "select", "case", "esac", "fi", "done", "in", "function"})


def simple_commands(script: str) -> list[list[str]] | None:
    """The words of each simple command in ``script``; None when it does not tokenize."""
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: a shell would refuse it too, or read on
        return None
    commands: list[list[str]] = []
    current: list[str] = []
    skip_next = False
    for token in tokens:
        if skip_next:  # the file name after a redirection
            skip_next = False
        elif token in _REDIRECTS:
            skip_next = True
        elif token in _SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    return [words for words in map(_command_words, commands) if words]


def _command_words(words: list[str]) -> list[str]:
    """Drop leading keywords and ``NAME=value`` assignments."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _SKIP_WORDS:
            return []
        if word in _PREFIX_WORDS or ("=" in word and word.split("=", 1)[0].isidentifier()):
            i += 1
            continue
        break
    return words[i:]


# What a reader can hide code in: expansions, substitutions, escapes, here-documents, and
# the redirections that open a process (``>(cmd)``) or a descriptor (``>&3``).
_HIDDEN = ("$", "`", "\\", "<<", "<(", ">(")
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def plain_script(script: str) -> tuple[list[list[str]], list[str]] | None:
    """(its simple commands, the files it writes through ``>``) when ``script`` hides
    nothing: no expansion, substitution, escape, here-document, glob of a target, or operator
    this reading does not know. None otherwise: then only running it would tell."""
    if any(mark in script for mark in _HIDDEN):
        return None
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    writes: list[str] = []
    after: str | None = None  # the redirection waiting for its target
    for token in tokens:
        if after is not None:
            if token in _SEPARATORS or token in _REDIRECTS or any(c in token for c in "*?[~"):
                return None
            if after in _WRITES and token not in _DEVICES:
                writes.append(token)
            elif after in (">&", "<&") and not token.isdigit() and token != "-":
                writes.append(token)  # ``>& file`` is ``&> file``
            after = None
        elif token in _REDIRECTS:
            after = token
        elif token not in _SEPARATORS and not token[:1].isalnum() and token[:1] in "();<>|&!":
            return None  # an operator this reading does not know (";&", "<<-", ...)
    commands = simple_commands(script)
    if after is not None or commands is None:
        return None
    return commands, list(dict.fromkeys(writes))
