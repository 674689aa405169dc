"""A reader of the protobuf text format that Caffe's solver and net files use, with line numbers kept.

No schema is needed: a message is an ordered list of (name, value, line) fields, a value being a number,
a string, an enum identifier, a boolean or a nested Message. Caffe's own `caffe.proto` is not required.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<comment>\#[^\n]*) | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*') |
    (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?) | (?P<name>[A-Za-z_][\w.]*) | (?P<punct>[{}:,;\[\]<>])
""", re.VERBOSE | re.ASCII)  # ASCII digits, letters and spaces only: "٠.٠١" or "５" is no number of the format


MAX_DEPTH = 64  # nested messages; Caffe's nets nest four deep


# The fields caffe.proto declares `repeated` (in any message); every other field given twice in one message
# is refused, where protobuf's text format would keep the last value silently.
REPEATED = frozenset({
    "dim", "data", "diff", "double_data", "double_diff",  # BlobShape, BlobProto
    "input", "input_shape", "input_dim", "layer", "layers",  # NetParameter
    "test_net", "test_net_param", "test_iter", "test_state", "stepvalue", "weights",  # SolverParameter
    "stage", "not_stage",  # NetState, NetStateRule
    "bottom", "top", "loss_weight", "param", "blobs", "propagate_down", "include", "exclude",  # LayerParameter
    "blob_share_mode", "blobs_lr", "weight_decay",  # V1LayerParameter (its weight_decay is per blob)
    "mean_value", "pad", "kernel_size", "stride", "dilation",  # Transformation-, ConvolutionParameter
    "data_filler", "shape", "num", "channels", "height", "width",  # DummyData-, InputParameter
    "slice_point", "offset",  # SliceParameter, CropParameter
})


class PrototxtError(ValueError):
    """Malformed text; the message names the file and line."""


@dataclass
class Message:
    fields: list = field(default_factory=list)  # (name, value, line)
    line: int = 0

    def get(self, name: str, default=None):
        for key, value, _ in self.fields:
            if key == name:
                return value
        return default

    def get_all(self, name: str) -> list:
        return [value for key, value, _ in self.fields if key == name]

    def line_of(self, name: str) -> int:
        return next((line for key, _, line in self.fields if key == name), self.line)


def check_repeats(message: Message, source: str, repeated=REPEATED, top_level=True) -> None:
    """PrototxtError naming the field and both lines where a field Caffe does not repeat is given twice in
    one message. At the top level of a solver `weight_decay` is one number; only layers repeat it."""
    seen = {}
    for name, value, line in message.fields:
        single = name not in repeated or (top_level and name == "weight_decay")
        if single and name in seen:
            raise PrototxtError(f"{source}:{line}: field {name} given twice (lines {seen[name]} and {line}); "
                                "Caffe does not repeat it")
        seen.setdefault(name, line)
        if isinstance(value, Message):
            check_repeats(value, source, repeated, top_level=False)


def parse(text: str, source: str = "<text>") -> Message:
    tokens = list(_tokenize(text, source))
    message, position = _message(tokens, 0, source, line=1)
    if position != len(tokens):
        kind, value, line = tokens[position]
        raise PrototxtError(f"{source}:{line}: unexpected {value!r}")
    return message


def _tokenize(text: str, source: str):
    line, position = 1, 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise PrototxtError(f"{source}:{line}: cannot read {text[position:position + 20]!r}")
        kind, value = match.lastgroup, match.group()
        if kind not in ("space", "comment"):
            yield kind, value, line
        line += value.count("\n")
        position = match.end()


def _message(tokens, position, source, line, closing=None, depth=0):
    if depth > MAX_DEPTH:
        raise PrototxtError(f"{source}:{line}: messages nested deeper than {MAX_DEPTH} levels")
    message = Message(line=line)
    while position < len(tokens):
        kind, value, line = tokens[position]
        if closing and value == closing:
            return message, position + 1
        if kind != "name":
            raise PrototxtError(f"{source}:{line}: expected a field name, got {value!r}")
        position += 1
        has_colon = position < len(tokens) and tokens[position][1] == ":"
        position += has_colon
        if position >= len(tokens):
            raise PrototxtError(f"{source}:{line}: field {value!r} has no value")
        opener = tokens[position][1]
        if opener in ("{", "<"):
            nested, position = _message(tokens, position + 1, source, line, "}" if opener == "{" else ">", depth + 1)
            message.fields.append((value, nested, line))
        elif has_colon:
            message.fields.append((value, _scalar(tokens[position], source), line))
            position += 1
        else:
            raise PrototxtError(f"{source}:{line}: field {value!r} needs ':' or '{{'")
        if position < len(tokens) and tokens[position][1] in (",", ";"):
            position += 1
    if closing:
        raise PrototxtError(f"{source}:{line}: missing {closing!r}")
    return message, position


def _scalar(token, source):
    kind, value, line = token
    try:
        if kind == "string":
            return bytes(value[1:-1], "utf-8").decode("unicode_escape")
        if kind == "number":
            number = float(value) if any(c in value for c in ".eE") else int(value)
            if number in (float("inf"), float("-inf")):
                raise ValueError("out of range")
            return number
    except ValueError as exc:  # a bad escape, an integer of more than 4,300 digits, 1e999
        reason = str(exc).split(":")[0] if kind == "number" else "a bad escape sequence"
        raise PrototxtError(f"{source}:{line}: value {value[:20]!r} cannot be read: {reason}") from None
    if kind == "name":
        return {"true": True, "false": False}.get(value, value)
    raise PrototxtError(f"{source}:{line}: expected a value, got {value!r}")
