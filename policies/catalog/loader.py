"""Load the bundled catalog, optionally overlaid with a user's file (negotiated prices, reservations).

`load_catalog(None)` reads the bundled YAML files beside this module. `load_catalog(path)` reads:
- a directory holding catalog.yaml, accelerators.yaml, offerings.yaml, assumptions.yaml
  (a complete catalog of its own), or
- a YAML overlay on the bundled catalog (`base: none` makes it stand alone):
    version, as_of, sources, accelerators [..], offerings [..] (add or replace by id;
    `like: <id>` copies an existing offering), prices [..] (override one offering, optionally
    one region), assumptions {..} (deep-merged over the defaults), or
- a CSV of price overrides: offering, region, on_demand_usd_per_chip_hour,
  spot_usd_per_chip_hour, source, as_of.
Every problem raises CatalogError naming the file, the field and what is wrong.
"""

from __future__ import annotations

import copy
import io
from datetime import date
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from accel.base.derived_cache import cached
from accel.base.errors import UsageError
from accel.base.model import describe_validation_error
from accel.base.safe_files import is_directory, read_text
from accel.policies import hardware
from accel.policies.catalog.machine_facts import with_chip_facts, with_machine_facts
from accel.policies.catalog.model import Accelerator, Catalog, Defaults, Offering, Source
from accel.policies.workload import ACCELERATOR_IDS

BUNDLED_DIR = Path(__file__).resolve().parent
_FILES = ("catalog.yaml", "accelerators.yaml", "offerings.yaml", "assumptions.yaml")
_OVERLAY_KEYS = ("version", "as_of", "base", "sources", "accelerators", "offerings", "prices", "assumptions")
_PRICE_FIELDS = ("on_demand", "spot", "host_on_demand", "host_spot")
_CSV_COLUMNS = ("offering", "region", "on_demand_usd_per_chip_hour", "spot_usd_per_chip_hour", "source", "as_of")


class CatalogError(UsageError):
    """A catalog file is missing, malformed or holds nonsense. Exit 2 like any bad input."""


def _read_yaml(path: Path) -> Any:
    from accel.base.yaml_files import read_yaml_file  # PyYAML only when a file is parsed: a warm run reads the cache

    return read_yaml_file(path, "catalog file", error=CatalogError)


def _mapping(data: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: expected {what} (a mapping), got {type(data).__name__}")
    return data


def _list(data: Any, where: str) -> list[Any]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise CatalogError(f"{where}: expected a list, got {type(data).__name__}")
    return data


def _validate(model: Any, data: Any, source: str, prefix: tuple[Any, ...], context: dict[str, Any] | None = None) -> Any:
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        raise CatalogError(describe_validation_error(error, source, model, prefix)) from None


def _deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class _Raw:
    """The catalog as raw mappings, each remembering the file and path it came from."""

    def __init__(self) -> None:
        self.version = ""
        self.as_of: Any = None
        self.sources: dict[str, tuple[Any, str]] = {}
        self.accelerators: dict[str, tuple[dict[str, Any], str, tuple[Any, ...]]] = {}
        self.offerings: dict[str, tuple[dict[str, Any], str, tuple[Any, ...]]] = {}
        self.assumptions: dict[str, Any] = {}
        self.assumptions_origin = ""
        self.price_origin: dict[str, str] = {}

    def add_sources(self, data: Any, where: str) -> None:
        for key, value in _mapping(data or {}, f"{where}: sources", "source ids").items():
            # An overlay's own source is checked in the overlay file unless it names a page.
            if isinstance(value, dict) and "page" not in value:
                value = {**value, "page": where}
            self.sources[str(key)] = (value, where)

    def add_accelerators(self, data: Any, where: str) -> None:
        for index, item in enumerate(_list(data, f"{where}: accelerators")):
            item = _mapping(item, f"{where}: accelerators[{index}]", "an accelerator")
            self.accelerators[str(item.get("id"))] = (item, where, ("accelerators", index))

    def add_offerings(self, data: Any, where: str, overlay: bool = False) -> None:
        """Add or replace offerings. In an overlay (only), a price given at the offering level is shorthand for
        that price in every region the overlay does not price itself (a negotiated rate is often one figure);
        a full catalog gives every region its own prices and is refused an offering-level one."""
        for index, item in enumerate(_list(data, f"{where}: offerings")):
            item = dict(_mapping(item, f"{where}: offerings[{index}]", "an offering"))
            prefix = ("offerings", item.get("id", index))
            shared = {field: item.pop(field) for field in _PRICE_FIELDS if field in item}
            if shared and not overlay:
                field = next(iter(shared))
                raise CatalogError(f"{where}: {'.'.join(map(str, prefix))}.{field}: a catalog gives every region its "
                                   f"own prices (regions.<region>.{field}); an offering-level price is shorthand "
                                   "only in a --catalog overlay")
            own_regions = item.get("regions")
            like = item.pop("like", None)
            if like is not None:
                if like not in self.offerings:
                    raise CatalogError(f"{where}: offerings[{index}].like: no offering {like!r}{_near(like, self.offerings)}")
                base = copy.deepcopy(self.offerings[like][0])
                base_regions = base.pop("regions", None) or {}
                if isinstance(item.get("regions"), dict):
                    # A region the copied offering also sells keeps that region's prices unless restated.
                    item["regions"] = {
                        name: {**{field: value for field, value in (base_regions.get(name) or {}).items()
                                  if field in _PRICE_FIELDS and field not in shared},
                               **info} if isinstance(info, dict) else info
                        for name, info in item["regions"].items()}
                else:
                    item["regions"] = base_regions
                item = {**base, **item}
            if shared:
                regions = _mapping(item.get("regions") or {}, f"{where}: {'.'.join(map(str, prefix))}.regions",
                                   "regions")
                stated = own_regions if isinstance(own_regions, dict) else {}
                expanded = {}
                for name, info in regions.items():
                    info = dict(info) if isinstance(info, dict) else {}
                    own = stated[name] if isinstance(stated.get(name), dict) else {}
                    # The offering-level price fills every region that does not state that price itself (a
                    # region copied by `like` takes the overlay's figure, not the bundled one); an overlay
                    # offering that names no spot price anywhere has no spot.
                    for field, value in shared.items():
                        if field not in own:
                            info[field] = copy.deepcopy(value)
                    info.setdefault("spot", None)
                    expanded[name] = info
                item["regions"] = expanded
            self.offerings[str(item.get("id"))] = (item, where, prefix)


def _near(name: str, known: Iterable[str]) -> str:
    import difflib  # only a message about a wrong name needs it

    hint = difflib.get_close_matches(str(name), list(known), n=1)
    return f"; did you mean {hint[0]!r}?" if hint else f"; known: {', '.join(sorted(known))}"


def _read_directory(directory: Path) -> _Raw:
    raw = _Raw()
    for name in _FILES:
        if not (directory / name).is_file():
            raise CatalogError(f"{directory}: a catalog directory needs {', '.join(_FILES)}; {name} is missing")
    head = _mapping(_read_yaml(directory / "catalog.yaml"), str(directory / "catalog.yaml"), "the catalog header")
    raw.version = str(head.get("version") or "")
    raw.as_of = head.get("as_of")
    raw.add_sources(head.get("sources"), str(directory / "catalog.yaml"))
    path = directory / "accelerators.yaml"
    raw.add_accelerators(_mapping(_read_yaml(path), str(path), "accelerators").get("accelerators"), str(path))
    path = directory / "offerings.yaml"
    raw.add_offerings(_mapping(_read_yaml(path), str(path), "offerings").get("offerings"), str(path))
    path = directory / "assumptions.yaml"
    raw.assumptions = _mapping(_read_yaml(path), str(path), "assumptions")
    raw.assumptions_origin = str(path)
    return raw


def _apply_overlay(raw: _Raw, data: dict[str, Any], where: str) -> None:
    unknown = [k for k in data if k not in _OVERLAY_KEYS]
    if unknown:
        key = unknown[0]
        raise CatalogError(f"{where}: {key}: unknown key{_near(key, _OVERLAY_KEYS)}")
    if data.get("version") is not None and not isinstance(data["version"], (str, int, float)):
        raise CatalogError(f"{where}: version: expected a name like acme-2026q1, got {type(data['version']).__name__}")
    if data.get("version"):
        raw.version = f"{raw.version}+{data['version']}" if raw.version else str(data["version"])
    elif raw.version:
        raw.version = f"{raw.version}+{Path(where).stem}"
    if data.get("as_of"):
        raw.as_of = data["as_of"]
    raw.add_sources(data.get("sources"), where)
    raw.add_accelerators(data.get("accelerators"), where)
    raw.add_offerings(data.get("offerings"), where, overlay=True)
    if data.get("assumptions") is not None:
        raw.assumptions = _deep_merge(raw.assumptions, _mapping(data["assumptions"], f"{where}: assumptions", "assumptions"))
        raw.assumptions_origin = f"{raw.assumptions_origin} + {where}"
    for index, item in enumerate(_list(data.get("prices"), f"{where}: prices")):
        _apply_price_override(raw, _mapping(item, f"{where}: prices[{index}]", "a price override"), f"{where}: prices[{index}]")


def _apply_price_override(raw: _Raw, item: dict[str, Any], where: str) -> None:
    allowed = ("offering", "region", "source", "as_of", *_PRICE_FIELDS)
    for key in item:
        if key not in allowed:
            raise CatalogError(f"{where}.{key}: unknown key{_near(key, allowed)}")
    offering_id = item.get("offering")
    for key in ("offering", "region"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise CatalogError(f"{where}.{key}: expected a name, got {type(item[key]).__name__} {item[key]!r}")
    if offering_id not in raw.offerings:
        raise CatalogError(f"{where}.offering: no offering {offering_id!r}{_near(str(offering_id), raw.offerings)}")
    target, _, _ = raw.offerings[offering_id]
    target = copy.deepcopy(target)
    region = item.get("region")
    regions = target.get("regions") or {}
    if region and region not in regions:
        raise CatalogError(f"{where}.region: offering {offering_id!r} is not offered in {region!r}; "
                           f"its regions: {', '.join(sorted(regions))}")
    prices = [field for field in _PRICE_FIELDS if field in item]
    if not prices:
        raise CatalogError(f"{where}: a price override needs at least one of {', '.join(_PRICE_FIELDS)}")
    # Without a region the override sets that price in every region of the offering.
    for name in [region] if region else list(regions):
        holder = regions[name] = dict(regions[name] or {})
        for field in prices:
            value = item[field]
            if value is None:
                holder[field] = None
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = {"usd": value}
            value = dict(_mapping(value, f"{where}.{field}", "a price"))
            for shared in ("source", "as_of"):
                if shared in item:
                    value.setdefault(shared, item[shared])
            holder[field] = value
    target["regions"] = regions
    raw.offerings[offering_id] = (target, raw.offerings[offering_id][1], raw.offerings[offering_id][2])
    raw.price_origin[offering_id] = where


def _read_price_csv(path: Path) -> list[dict[str, Any]]:
    import csv  # only a CSV overlay needs it

    try:
        rows = list(csv.DictReader(io.StringIO(read_text(path, "price CSV", error=CatalogError), newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise CatalogError(f"{path}: cannot read the price CSV ({error})") from None
    overrides = []
    for number, row in enumerate(rows, start=2):
        where = f"{path}: line {number}"
        missing = [c for c in ("offering", "on_demand_usd_per_chip_hour", "source", "as_of") if not (row.get(c) or "").strip()]
        if missing:
            raise CatalogError(f"{where}: missing {', '.join(missing)}; columns are {', '.join(_CSV_COLUMNS)}")
        item: dict[str, Any] = {"offering": row["offering"].strip(), "source": row["source"].strip(),
                                "as_of": row["as_of"].strip()}
        if (row.get("region") or "").strip():
            item["region"] = row["region"].strip()
        for column, field in (("on_demand_usd_per_chip_hour", "on_demand"), ("spot_usd_per_chip_hour", "spot")):
            text = (row.get(column) or "").strip()
            if text:
                try:
                    item[field] = float(text)
                except ValueError:
                    raise CatalogError(f"{where}: {column}: {text!r} is not a number") from None
        overrides.append((item, where))
    if not overrides:
        raise CatalogError(f"{path}: no price rows; a price CSV has the header {','.join(_CSV_COLUMNS)} and one row "
                           "per price it overrides")
    return overrides  # type: ignore[return-value]


def _build(raw: _Raw) -> Catalog:
    sources = {key: _validate(Source, value, where, ("sources", key)) for key, (value, where) in raw.sources.items()}
    accelerators = {}
    for key, (item, where, prefix) in raw.accelerators.items():
        if key not in ACCELERATOR_IDS:
            raise CatalogError(f"{where}: {'.'.join(map(str, prefix))}.id: unknown accelerator {key!r}; "
                               f"known: {', '.join(ACCELERATOR_IDS)}")
        accelerators[key] = _validate(Accelerator, with_chip_facts(item), where, prefix)
    offerings = []
    for key, (item, where, prefix) in raw.offerings.items():
        if key in raw.price_origin:
            where = f"{where} (with prices from {raw.price_origin[key]})"
        path = f"{where}: {'.'.join(map(str, prefix))}"
        item = with_machine_facts(item, lambda message, _path=path: CatalogError(f"{_path}.{message}"))
        per_host = item.get("chips_per_host") if isinstance(item.get("chips_per_host"), int) else None
        offerings.append(_validate(Offering, item, where, prefix, {"sources": sources, "chips_per_host": per_host}))
    defaults = _validate(Defaults, raw.assumptions, raw.assumptions_origin, (), {"sources": sources})
    try:
        as_of = raw.as_of if isinstance(raw.as_of, date) else date.fromisoformat(str(raw.as_of))
    except ValueError:
        raise CatalogError(f"catalog as_of: {raw.as_of!r} is not a date (YYYY-MM-DD)") from None
    try:
        return Catalog(version=raw.version or "unversioned", as_of=as_of, sources=sources,
                       accelerators=accelerators, offerings=tuple(offerings), defaults=defaults)
    except ValidationError as error:
        raise CatalogError(describe_validation_error(error, "catalog", Catalog)) from None


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The bundled catalog (path None), a catalog directory, or the bundled one with a user overlay."""
    if path is None:
        return _bundled()
    file = Path(path)
    if is_directory(file):
        return _build(_read_directory(file))
    # Anything else is read as a regular file (accel/base/safe_files.py says what it is if not).
    if file.suffix.lower() == ".csv":
        raw = _read_directory(BUNDLED_DIR)
        raw.version = f"{raw.version}+{file.stem}"
        for item, where in _read_price_csv(file):
            _apply_price_override(raw, item, where)
        return _build(raw)
    data = _read_yaml(file)
    if data is None or data == {}:  # empty, or only comments: a user naming this file meant to change something
        raise CatalogError(f"{file}: an empty catalog overlay changes nothing; give any of {', '.join(_OVERLAY_KEYS)} "
                           "(policies/catalog/README.md), or leave out the catalog option for the bundled one")
    data = _mapping(data, str(file), "a catalog overlay")
    base = data.get("base", "bundled")
    if base not in ("bundled", "none"):
        raise CatalogError(f"{file}: base: {base!r} is not allowed; use 'bundled' (default) or 'none'")
    if base == "none":
        raw = _Raw()
        bundled = _read_directory(BUNDLED_DIR)
        raw.assumptions, raw.assumptions_origin = bundled.assumptions, bundled.assumptions_origin
        raw.as_of = data.get("as_of")
    else:
        raw = _read_directory(BUNDLED_DIR)
    _apply_overlay(raw, data, str(file))
    if base == "none" and not raw.offerings:
        raise CatalogError(f"{file}: offerings: a stand-alone catalog (base: none) needs at least one offering")
    return _build(raw)


_BUNDLED: Catalog | None = None


def _bundled() -> Catalog:
    global _BUNDLED
    if _BUNDLED is None:
        if hardware.bundled_in_use():
            # Validated once and kept in the user's cache while the bundled data files and the code
            # are unchanged: reading it back validates nothing again (accel.base.derived_cache).
            inputs = [*sorted(BUNDLED_DIR.glob("*.yaml")), *sorted(BUNDLED_DIR.glob("*.csv")), hardware.BUNDLED_FACTS]
            _BUNDLED = cached("catalog", inputs, lambda: _build(_read_directory(BUNDLED_DIR)),
                              code=[hardware.POLICIES_DIR])
        else:
            _BUNDLED = _build(_read_directory(BUNDLED_DIR))
    return _BUNDLED


def offerings_from_inventory(items: Iterable[Any]) -> list[Offering]:
    """Offerings for accelerators a Kubernetes cluster already has (a stack file's inventory).

    Each item: {accelerator, count, usd_per_chip_hour, name?, gpus_per_node?, nvlink_domain_gpus?,
    nvlink_clique_label?} as a mapping or an object with those attributes. Cloud "kubernetes", region "on-prem",
    no spot, at most `count` chips. Nodes labelled by their NVLink clique (GB200: GPU Feature Discovery's
    nvidia.com/gpu.clique) carry its size in nodes, which a tensor-parallel group may span as on A4X.
    """
    from accel.policies.hardware import shapes

    offerings = []
    named: dict[str, int] = {}   # offering id -> the entry it came from
    for index, item in enumerate(items):
        get = item.get if isinstance(item, dict) else (lambda key, default=None, _i=item: getattr(_i, key, default))
        where = f"inventory[{index}]"
        accelerator = get("accelerator")
        if accelerator not in ACCELERATOR_IDS:
            raise CatalogError(f"{where}.accelerator: unknown accelerator {accelerator!r}{_near(str(accelerator), ACCELERATOR_IDS)}")
        name = get("name") or accelerator
        generation = shapes.GENERATION_BY_ACCELERATOR.get(accelerator)
        facts = hardware.current()
        if generation is None and (facts.gpu_machine(str(name)) is not None or str(name) in facts.tpu_machines):
            # The name is the pool's machine type: a cloud's would bring that machine's facts (its NVLink domain's
            # placement unit, a Kueue level the cluster lacks) to nodes that are not it.
            raise CatalogError(f"{where}.name: {name!r} is a cloud machine type (policies/hardware/facts.toml); name "
                               "the inventory for your cluster's nodes, e.g. the accelerator or the rack")
        # Default node size: a multi-host TPU VM's chips, a GB200 tray's 4, or eight GPUs (the hardware table's).
        per_node = get("gpus_per_node") or facts.inventory_chips_per_node(accelerator)
        count = get("count")
        if isinstance(count, int) and isinstance(per_node, int) and count % per_node:
            raise CatalogError(f"{where}: {count} chips is not a whole number of nodes of {per_node} "
                               f"(gpus_per_node); declare the chips of whole nodes")
        price = get("usd_per_chip_hour")
        data = {
            "id": f"kubernetes-{name}".lower().replace("_", "-").replace(" ", "-"),
            "cloud": "kubernetes",
            "accelerator": accelerator,
            "machine_type": generation.multi_host_machine_type if generation else str(name),
            "chips_per_host": per_node,
            "regions": {"on-prem": {"zones": ["on-prem"], "spot": None,
                                    "on_demand": {"usd": price, "source": "stack inventory: internal rate per chip-hour",
                                                  "as_of": date.today().isoformat()}}},
            "path": "kubernetes-inventory",
            "max_chips": get("count"),
        }
        if get("nvlink_clique_label") and generation is None and isinstance(per_node, int):
            # The clique the stack's Kueue Topology places by (components/kubernetes/pools.py inventory_pool) is the
            # unit the layout spans trays within: one derivation for both (HardwareFacts.inventory_clique_nodes).
            clique = facts.inventory_clique_nodes(accelerator, per_node, get("nvlink_domain_gpus"))
            if clique is None:
                raise CatalogError(f"{where}.nvlink_clique_label: {accelerator} nodes of {per_node} GPUs share no "
                                   "NVLink domain across nodes (nvlink_domain_gpus, or the hardware table's domain "
                                   "of the chip), so no clique joins them; set it only for GPUs like GB200 NVL72")
            data["nvlink_clique_nodes"] = clique
        # The name is the offering's id and its pool's machine type, by which the search keys what it derives per
        # machine (an NVLink clique's nodes) and the Plan names its offering: two entries cannot share one.
        if data["id"] in named:
            raise CatalogError(f"{where}.name: {name!r} names inventory[{named[data['id']]}] too (unnamed entries take "
                               "the accelerator's, or in a stack the cluster's, name); give each entry its own name")
        named[data["id"]] = index
        offerings.append(_validate(Offering, data, where, ()))
    return offerings
