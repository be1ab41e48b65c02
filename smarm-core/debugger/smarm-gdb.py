"""gdb commands for smarm programs: list the actors, show a parked actor's stack.

Load it into a gdb session on a smarm program (a live process, stopped):

    (gdb) source smarm-core/debugger/smarm-gdb.py
    (gdb) smarm actors              every actor: pid, state, what a parked one waits on
    (gdb) smarm actors --stacks     the same, with each parked actor's stack
    (gdb) smarm bt <0.5.1>          one actor's stack (a pid, or INDEX.GENERATION)

The script reads the runtime's own description of its actor table (the
symbol `smarm_debug_slot_tables`, `smarm-core/src/slot/debugger.rs`) with
plain memory reads, so it needs no Rust debug info: a release build works,
and `CARGO_PROFILE_RELEASE_DEBUG=true` adds file and line numbers. A
running actor's stack is its scheduler thread's (`thread apply all bt`).
A parked or queued actor's stack is shown by pointing the selected
thread's registers at the context the actor saved when it switched out,
walking the frames, and putting the registers back: it needs a live
process, not a core file.
"""

import re
import struct

import gdb

MAGIC = int.from_bytes(b"smarmdbg", "little")
VERSION = 1
TABLES = "smarm_debug_slot_tables"
MAX_TABLES = 64

# `slot/word.rs`: generation:32 | epoch:28 | state:4.
STATES = {
    0: "vacant",
    1: "queued",
    2: "running",
    3: "running (woken)",
    4: "parked",
    5: "done",
}
PARKED = 4
QUEUED = 1

# `scheduler/wait.rs`'s `WaitingOn`.
WAITING_ON = {
    1: "message",
    2: "select",
    3: "reply",
    4: "lock",
    5: "fd",
    6: "join",
    7: "timer",
    8: "blocking job",
    9: "room in a channel",
    10: "hibernating",
    11: "future",
}
HIBERNATING = 10

# `context/x86_64.rs`: what `switch` pushed, from the saved stack pointer up.
SWITCH_FRAME = ["r15", "r14", "r13", "r12", "rbx", "rbp", "rip"]
FRAME_LIMIT = 64


class Actor:
    def __init__(self, runtime, index, word, sp, waiting_on, parent):
        self.runtime = runtime
        self.index = index
        self.generation = word >> 32
        self.state = word & 0xF
        self.sp = sp
        self.waiting_on = waiting_on
        self.parent = parent

    def pid(self):
        return "<0.%d.%d>" % (self.index, self.generation)

    def describe(self):
        what = STATES.get(self.state, "state %d" % self.state)
        if self.state == PARKED and self.waiting_on in WAITING_ON:
            what += " on " + WAITING_ON[self.waiting_on]
        parent = ""
        if self.parent:
            # `Pid::to_bits`: index:32 | generation:32.
            parent = "  parent <0.%d.%d>" % (self.parent >> 32, self.parent & 0xFFFFFFFF)
        return "%-16s %s%s" % (self.pid(), what, parent)

    def has_saved_stack(self):
        # A queued actor that never ran, and a hibernating one, hold no
        # context (`sp` is null); a running one is on its thread.
        if self.sp == 0:
            return False
        if self.state == PARKED:
            return self.waiting_on != HIBERNATING
        return self.state == QUEUED


def _inferior():
    inferior = gdb.selected_inferior()
    if inferior is None or inferior.pid == 0:
        raise gdb.GdbError("smarm: no live process (run or attach first)")
    return inferior


def _read(address, size):
    return bytes(_inferior().read_memory(address, size))


def _u64(address):
    return struct.unpack("<Q", _read(address, 8))[0]


def _tables_address():
    try:
        out = gdb.execute("info address " + TABLES, to_string=True)
    except gdb.error:
        raise gdb.GdbError(
            "smarm: no symbol %s: is this a smarm program (smarm-core 0.1+)?" % TABLES
        )
    found = re.search(r"0x[0-9a-fA-F]+", out)
    if not found:
        raise gdb.GdbError("smarm: cannot read the address of %s: %s" % (TABLES, out.strip()))
    return int(found.group(0), 16)


def _tables():
    """Each published slot table, as a dict of its descriptor's fields."""
    base = _tables_address()
    tables = []
    for i in range(MAX_TABLES):
        ptr = _u64(base + 8 * i)
        if ptr == 0:
            continue
        raw = _read(ptr, 56)  # size_of::<DebugTable>()
        magic, version, slot_size, segments, count, seg_len = struct.unpack_from("<QIIQQQ", raw, 0)
        if magic != MAGIC:
            gdb.write("smarm: table %d at 0x%x is not a smarm table, skipped\n" % (i, ptr))
            continue
        if version != VERSION:
            gdb.write(
                "smarm: table %d has layout version %d, this script reads %d: skipped\n"
                % (i, version, VERSION)
            )
            continue
        word, sp, waiting_on, parent = struct.unpack_from("<IIII", raw, 40)
        tables.append(
            dict(
                number=len(tables),
                slot_size=slot_size,
                segments=segments,
                segment_count=count,
                segment_len=seg_len,
                word=word,
                sp=sp,
                waiting_on=waiting_on,
                parent=parent,
            )
        )
    return tables


def _actors():
    """Every actor of every runtime (vacant slots left out)."""
    actors = []
    for table in _tables():
        size = table["slot_size"]
        for s in range(table["segment_count"]):
            segment = _u64(table["segments"] + 8 * s)
            if segment == 0:
                continue
            raw = _read(segment, size * table["segment_len"])
            for i in range(table["segment_len"]):
                at = i * size
                word = struct.unpack_from("<Q", raw, at + table["word"])[0]
                if word & 0xF == 0:
                    continue
                actors.append(
                    Actor(
                        table["number"],
                        s * table["segment_len"] + i,
                        word,
                        struct.unpack_from("<Q", raw, at + table["sp"])[0],
                        raw[at + table["waiting_on"]],
                        struct.unpack_from("<Q", raw, at + table["parent"])[0],
                    )
                )
    return actors


class _Language:
    """Evaluate register assignments as C, whatever the frame's language."""

    def __enter__(self):
        shown = gdb.execute("show language", to_string=True)
        found = re.search(r'"([^"]+)"', shown)
        self.previous = found.group(1) if found else "auto"
        if self.previous.startswith("auto"):
            self.previous = "auto"
        gdb.execute("set language c", to_string=True)

    def __exit__(self, *exc):
        gdb.execute("set language " + self.previous, to_string=True)
        return False


def _frame_line(number, frame):
    pc = frame.pc()
    name = frame.name()
    if frame.type() == gdb.SIGTRAMP_FRAME:
        name = "<the actor's stack ends: switched to from its scheduler>"
    elif name is None:
        name = "??"
    text = "    #%-2d 0x%016x in %s" % (number, pc, name)
    sal = frame.find_sal()
    if sal.symtab is not None and sal.line:
        text += " at %s:%d" % (sal.symtab.filename, sal.line)
    return text


def actor_stack(actor):
    """The frames of `actor`'s saved context, innermost first, as lines."""
    words = struct.unpack("<7Q", _read(actor.sp, 8 * len(SWITCH_FRAME)))
    context = dict(zip(SWITCH_FRAME, words))
    context["rsp"] = actor.sp + 8 * len(SWITCH_FRAME)
    gdb.execute("frame 0", to_string=True)
    frame = gdb.selected_frame()
    saved = {reg: int(frame.read_register(reg)) for reg in context}
    lines = []
    with _Language():
        try:
            for reg, value in context.items():
                gdb.execute("set $%s = %d" % (reg, value), to_string=True)
            frame = gdb.newest_frame()
            number = 0
            while frame is not None and number < FRAME_LIMIT:
                lines.append(_frame_line(number, frame))
                if frame.type() == gdb.SIGTRAMP_FRAME:
                    break  # beyond it is whichever scheduler last ran the actor
                frame = frame.older()
                number += 1
        finally:
            for reg, value in saved.items():
                gdb.execute("set $%s = %d" % (reg, value), to_string=True)
            gdb.execute("frame 0", to_string=True)
    return lines


def _parse_pid(text):
    found = re.fullmatch(r"<?(?:0\.)?(\d+)(?:\.(\d+))?>?", text.strip())
    if not found:
        raise gdb.GdbError("smarm bt: %r is not a pid: write <0.INDEX.GENERATION> or INDEX" % text)
    index = int(found.group(1))
    generation = int(found.group(2)) if found.group(2) is not None else None
    return index, generation


class SmarmPrefix(gdb.Command):
    """smarm's commands: `smarm actors [--stacks]`, `smarm bt PID`."""

    def __init__(self):
        super().__init__("smarm", gdb.COMMAND_STACK, prefix=True)


class SmarmActors(gdb.Command):
    """List every actor of every smarm runtime in the process: its pid, its
state, and what a parked actor waits on. With --stacks, each parked or
queued actor's stack follows it."""

    def __init__(self):
        super().__init__("smarm actors", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        args = arg.split()
        unknown = [a for a in args if a != "--stacks"]
        if unknown:
            raise gdb.GdbError("smarm actors: unknown argument %s (try --stacks)" % unknown[0])
        stacks = "--stacks" in args
        actors = _actors()
        runtimes = sorted({a.runtime for a in actors})
        for runtime in runtimes:
            mine = [a for a in actors if a.runtime == runtime]
            gdb.write("runtime %d: %d actors\n" % (runtime, len(mine)))
            for actor in mine:
                gdb.write("  " + actor.describe() + "\n")
                if stacks and actor.has_saved_stack():
                    for line in actor_stack(actor):
                        gdb.write(line + "\n")
        if not actors:
            gdb.write("smarm: no actors (no runtime is running)\n")


class SmarmBt(gdb.Command):
    """Show one actor's stack: smarm bt <0.INDEX.GENERATION> (or INDEX)."""

    def __init__(self):
        super().__init__("smarm bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        if not arg.strip():
            raise gdb.GdbError("smarm bt: which actor? write smarm bt <0.INDEX.GENERATION>")
        index, generation = _parse_pid(arg)
        found = [
            a
            for a in _actors()
            if a.index == index and (generation is None or a.generation == generation)
        ]
        if not found:
            raise gdb.GdbError("smarm bt: no live actor %s (smarm actors lists them)" % arg.strip())
        for actor in found:
            gdb.write(actor.describe() + "\n")
            if actor.has_saved_stack():
                for line in actor_stack(actor):
                    gdb.write(line + "\n")
            elif actor.state in (2, 3):
                gdb.write("    running: its stack is its scheduler thread's (thread apply all bt)\n")
            else:
                gdb.write("    no saved stack (not started yet, hibernating or done)\n")


SmarmPrefix()
SmarmActors()
SmarmBt()
