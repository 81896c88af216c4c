"""Where each handle is on each memory node, by the last event about it in a data-event log
(StarPU-SimGrid's xlog or hetsim's `runtime-log.txt`, the same lines): shared by
pop-states.py and log-series.py."""


class Places:
    def __init__(self):
        self.state = {}  # (node, handle) -> class

    def see(self, f):
        """Takes the fields of one log line; Q, X and E lines move a handle."""
        kind = f[0]
        if kind == "Q":
            # Q time handle src dst level
            key = (int(f[4]), f[2])
            if self.state.get(key) != "copied":
                self.state[key] = "requested"
        elif kind == "X":
            # X time src dst handle origin
            self.state[(int(f[3]), f[4])] = "copied"
        elif kind == "E":
            # E time node handle reuse|free level pins
            level = "fetch" if f[5] == "0" else "prefetch"
            pinned = "pinned" if int(f[6]) > 0 else "unpinned"
            self.state[(int(f[2]), f[3])] = f"gone ({level} eviction, {pinned})"

    def at(self, node, handle):
        """`copied` (a copy into the node started: there or landing), `requested` (a request
        made, no copy started), `gone (<level> eviction, <pinned or not>)` or `never`."""
        return self.state.get((node, handle), "never")

    @staticmethod
    def reads(fields):
        """The handles a P line's task reads (StarPU's mode bit 1)."""
        for access in fields[4:]:
            handle, mode = access.rsplit(":", 1)
            if int(mode) & 1:
                yield handle
