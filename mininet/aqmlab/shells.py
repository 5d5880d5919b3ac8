"""Shell commands in Mininet nodes: each node's list in few round trips to its
shell, all nodes' lists at once (a lab's set-up is hundreds of short
commands; one at a time, their round trips add up to seconds)."""

import re

DONE = "__aqmlab_done_"
MAX_LINE = 3000     # characters per line sent (a shell's pty holds 4095 per line)


def run_commands(commands_by_node):
    """Run {node: [shell command, ...]}: each list in order in its node's shell
    until one fails, every node's at the same time. The first failure raises
    RuntimeError naming the node, the command and its output (once every
    shell has answered: none is left busy)."""
    pending = {node: batches(commands) for node, commands in commands_by_node.items()}
    while any(pending.values()):
        sent = []
        try:
            for node, queued in pending.items():
                if queued:
                    node.sendCmd(script(queued[0]))
                    sent.append((node, queued.pop(0)))
        finally:
            answers = [(node, commands, node.waitOutput()) for node, commands in sent]
        for node, commands, output in answers:
            failure = first_failure(commands, output)
            if failure:
                raise RuntimeError(f"{node.name}: `{failure[0]}` failed: {failure[1]}")


def batches(commands):
    """The commands in order, in lists whose script fits one line."""
    found = []
    for command in commands:
        if found and len(script(found[-1] + [command])) <= MAX_LINE:
            found[-1].append(command)
        else:
            found.append([command])
    return found


def script(commands):
    """One shell line: the commands in order, each followed by its marker,
    stopping at the first that fails."""
    return " && ".join(f"{{ {command} ; }} 2>&1 && echo {DONE}{index}"
                       for index, command in enumerate(commands))


def first_failure(commands, output):
    """(command, its output) of the first command without its marker, or None."""
    done = len(re.findall(rf"^{DONE}\d+\s*$", output, re.M))
    if done == len(commands):
        return None
    after = output.split(f"{DONE}{done - 1}", 1)[1] if done else output
    return commands[done], after.strip()
