"""Configuration files: one trial's settings in YAML, as `import-caffe` writes them and the defaults
table holds them. Either a defaults-table entry (its settings under `config:`) or a flat mapping of
TrialSpec fields; unknown keys are errors naming the file, the key path and what is allowed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from sensitivity.core.paths import NotRegular, read_bytes_bounded
from sensitivity.core.spec import TrialSpec


class EntryFile(BaseModel):
    """A configuration file written as a defaults-table entry (as `import-caffe` writes one): its TrialSpec
    fields under `config`; the entry's other keys are kept for the reader and not used here."""
    model_config = ConfigDict(extra="forbid", strict=True)
    config: Optional[dict] = None
    framework: Optional[str] = None  # where the configuration comes from
    dataset: Optional[str] = None
    name: Any = None
    kind: Any = None
    runs_on: Any = None
    source: Any = None
    original_model: Any = None
    caffe_files: Any = None
    ignored: Any = None
    not_reproduced: Any = None
    note: Any = None
    notes: Any = None
    train_size: Any = None
    schedule_epochs: Any = None
    budget_epochs: Any = None
    checked_against: Any = None


ENTRY_KEYS = tuple(EntryFile.model_fields)


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file and the key path."""


# What a configuration or search-space file may be (docs/bounds.md): far above any real one.
MAX_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_NODES = 50_000  # values after aliases are expanded (an alias bomb is refused, not walked); the
# largest shipped file, defaults.yaml, holds 1,025


def read_mapping(path, error=None) -> dict:
    """A YAML file's top-level mapping; raises `error` (ConfigError by default) with one line naming the file.
    Refused before parsing: a file over MAX_BYTES, not UTF-8, or nested deeper than MAX_DEPTH; after parsing
    and before anything is built from the document (`_check_nodes`): an alias inside the collection it names
    (recursion), more than MAX_NODES values (aliases counted each time they are used), a tag beyond YAML's
    core schema."""
    error = error or ConfigError
    path = Path(path)
    text = read_text(path, error)
    try:
        _check_depth(text, path, error)
        data = _load(text)
    except (DuplicateKey, Yaml11Form, Unbounded) as exc:
        raise error(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:
        if isinstance(exc, error):
            raise
        # int() of more than 4,300 digits, a date out of range
        raise error(f"{path}: not valid YAML: {str(exc).split(':')[0]}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return data


def _load(text: str):
    """The document of `text`, composed into nodes, checked by `_check_nodes`, then built (StrictLoader)."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class Unbounded(yaml.YAMLError):
    """A document the walk refuses before building it: recursion through an alias, more than MAX_NODES values,
    or a tag beyond the core schema."""


# YAML 1.2's core schema, and `<<` (merge keys, which StrictLoader keeps as YAML's documented way to override)
CORE_TAGS = {f"tag:yaml.org,2002:{name}": f"!!{name}" for name in
             ("str", "int", "float", "bool", "null", "seq", "map", "merge")}
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


def _check_nodes(root) -> None:
    """Walk the composed document once, aliases expanded, before anything is built: an alias that names a
    collection it is inside (`a: &a [1, *a]`, which PyYAML builds as a list containing itself, and which any
    later walk would follow forever), more than MAX_NODES values, and a tag beyond the core schema (`!!set`,
    `!!omap`, `!!binary`, `!!python/...`, a date) are refused as Unbounded, naming the key path and the line.
    The walk takes at most MAX_NODES steps (and one push per item of the collections it enters)."""
    on_path: set = set()  # ids of the collections enclosing the node being visited
    count, stack = 0, [(root, "", False)]
    while stack:
        node, where, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        line = node.start_mark.line + 1
        if id(node) in on_path:
            raise Unbounded(f"{where or 'the document'}: an alias to a collection it is inside (the one at line "
                            f"{line}): recursive YAML; an alias may only repeat a value defined before it")
        count += 1
        if count > MAX_NODES:
            raise Unbounded(f"more than {MAX_NODES:,} values (aliases counted where they are used)")
        if node.tag not in CORE_TAGS:
            raise Unbounded(f"{where or 'the document'}: {_tag_refusal(node, line)}")
        if isinstance(node, yaml.ScalarNode):
            continue
        on_path.add(id(node))
        stack.append((node, where, True))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{where}[{i}]", False) for i, child in reversed(list(enumerate(node.value))))
        else:
            for key, value in reversed(node.value):
                name = str(key.value)[:60] if isinstance(key, yaml.ScalarNode) else "?"
                stack.append((value, f"{where}.{name}" if where else name, False))
                stack.append((key, f"{where}.{name}" if where else name, False))


def _tag_refusal(node, line: int) -> str:
    """Why a node of a tag beyond the core schema is refused, and what is allowed."""
    if node.tag == _TIMESTAMP:
        return f"{node.value[:40]!r} at line {line} is a date in YAML 1.1 and a string in YAML 1.2: quote it"
    allowed = ", ".join(sorted(set(CORE_TAGS.values()) - {"!!merge"}))
    return (f"tag {node.tag.replace('tag:yaml.org,2002:', '!!')[:60]!r} at line {line} is not taken; allowed: the "
            f"core schema's {allowed} (a list for a set)")


class DuplicateKey(yaml.YAMLError):
    """A mapping that gives one key twice; YAML's last-one-wins would silently drop the first value."""


class Yaml11Form(yaml.YAMLError):
    """A plain scalar that YAML 1.1 (PyYAML) and YAML 1.2 read differently: `1:0` (60 in 1.1), `010` (8),
    `1_000`, `0b11`, `yes`/`on`/`off` (booleans in 1.1 only). Refused rather than read either way."""


_INT, _FLOAT, _BOOL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"


def _yaml11_hint(node):
    """Why `node`, a plain scalar, reads differently in YAML 1.1 and 1.2; None where it does not."""
    if not isinstance(node, yaml.ScalarNode) or node.style or node.tag not in (_INT, _FLOAT, _BOOL):
        return None
    text = node.value
    if node.tag == _BOOL:
        return None if text.lower() in ("true", "false") else "a YAML 1.1 boolean; write true or false"
    digits = text.lstrip("+-")
    if ":" in digits:
        return "base 60 in YAML 1.1; write the number in decimal"
    if "_" in digits:
        return "underscores in a number; write the digits alone"
    if node.tag == _INT and digits[:2].lower() == "0b":
        return "binary in YAML 1.1; write the number in decimal"
    if node.tag == _INT and len(digits) > 1 and digits[0] == "0" and digits[1:2].lower() != "x":
        return "octal in YAML 1.1 (a leading zero); write the number without it"
    return None


# libyaml's parser where PyYAML was built with it: the same documents, parsed about 20 times faster, so that a
# file of MAX_BYTES is read (or refused) within a second or two
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_SAFE_LOADER):
    """PyYAML's safe loader that refuses a key given twice in one mapping, naming it and both lines, and a
    plain value that YAML 1.1 and 1.2 read differently (`epochs: 1:0`, `010`, `yes`), naming its key. A key
    that overrides a merged one (`<<: *base`) is YAML's documented way to override, and stays valid."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                _refuse_yaml11(key_node, "a key")
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                _refuse_yaml11(value_node, f"key {str(key)[:60]!r}")
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key, mark = self.construct_object(key_node), key_node.start_mark
                try:
                    first = seen.setdefault(key, mark)
                except TypeError:  # an unhashable key: the constructor refuses it below
                    continue
                if first is not mark:
                    raise DuplicateKey(f"key {str(key)[:60]!r} given twice, at {_where(first, mark)} and "
                                       f"{_where(mark, first)}")
        return super().construct_mapping(node, deep=deep)


def _refuse_yaml11(node, what: str) -> None:
    """Yaml11Form naming `what` (and an item's index) where `node`, or an item of a list it is, reads
    differently in YAML 1.1 and 1.2."""
    items = [(node, "")]
    while items:
        item, index = items.pop()
        if isinstance(item, yaml.SequenceNode):
            items.extend((child, f"{index}[{i}]") for i, child in enumerate(item.value))
        elif (hint := _yaml11_hint(item)) is not None:
            raise Yaml11Form(f"{what}{index}: {item.value[:40]!r} at line {item.start_mark.line + 1} is {hint}")


def _where(mark, other) -> str:
    """`line N`, with the column where both are on one line (a flow mapping)."""
    return f"line {mark.line + 1}" + (f" column {mark.column + 1}" if mark.line == other.line else "")


def read_text(path, error) -> str:
    """A regular text file of at most MAX_BYTES, in UTF-8 (a FIFO or a device is refused unread); `error` with
    one line naming the file otherwise."""
    try:
        raw = read_bytes_bounded(path, MAX_BYTES)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except NotRegular as exc:
        raise error(f"{path}: cannot read: {exc}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})") from None
    except ValueError as exc:  # a NUL in the path
        raise error(f"{str(path)!r}: cannot read: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise error(f"{path}: larger than {MAX_BYTES:,} bytes")
    return text


def _check_depth(text: str, path: Path, error) -> None:
    """Nesting deeper than MAX_DEPTH (PyYAML's loader recurses), and more than MAX_NODES values written out,
    are refused from the parser's events, before any node is made: the events cost a fifth of composing."""
    depth, values = 0, 0
    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise error(f"{path}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            continue
        elif not isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            continue
        values += 1
        if values > MAX_NODES:
            raise error(f"{path}: more than {MAX_NODES:,} values")


def load_config(path) -> dict:
    """The TrialSpec fields a configuration file sets."""
    path = Path(path)
    data = read_mapping(path)
    if "config" in data:
        try:
            entry = EntryFile.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            allowed = f"; allowed: {', '.join(sorted(ENTRY_KEYS))}" if error["type"] == "extra_forbidden" else ""
            message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            raise ConfigError(f"{path}: {where}: {message}{allowed}") from None
        fields, prefix = dict(entry.config or {}), "config."
        if entry.framework not in (None, "caffe"):  # Caffe's configurations run on other frameworks
            fields.setdefault("framework", entry.framework)
        if entry.dataset:
            fields.setdefault("dataset", entry.dataset)
    else:
        fields, prefix = data, ""
    allowed = set(TrialSpec.model_fields)
    for key in fields:
        if key not in allowed:
            raise ConfigError(f"{path}: {prefix}{key}: unknown field; allowed: {', '.join(sorted(allowed))}")
    if "layers" in fields:
        fields["layers"] = tuple(fields["layers"])
    if "stepvalues" in fields:
        fields["stepvalues"] = tuple(fields["stepvalues"])
    return fields


def dump_config(entry: dict) -> str:
    return yaml.safe_dump(entry, sort_keys=False, default_flow_style=False, width=110)
