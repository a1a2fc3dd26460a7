"""gpucc's error: a stable code, a message, and the node and field when known."""


class GPUCCError(Exception):
    """A failure with one of gpucc's stable codes (README, "The codes are
    stable"): invalid_graph, limit_exceeded, backend_unavailable,
    execution_failed, non_finite_output, invalid_input, not_granted, busy,
    disposed, timeout, io, unsupported, internal, ..."""

    def __init__(self, code, message, node=None, field=None):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.node = node if node is not None and node >= 0 else None
        self.field = field or None

    def to_dict(self):
        d = {"code": self.code, "message": self.message}
        if self.node is not None:
            d["node"] = self.node
        if self.field:
            d["field"] = self.field
        return d

    @classmethod
    def from_dict(cls, d):
        d = d or {}
        code, msg = d.get("code", "internal"), d.get("message", "")
        if msg.startswith(code + ": "):  # gpucc's messages begin with their code
            msg = msg[len(code) + 2:]
        return cls(code, msg, d.get("node"), d.get("field"))
