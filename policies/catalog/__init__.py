"""The hardware catalog: dated, sourced data files and the loader that checks them.

    from accel.policies.catalog import load_catalog
    catalog = load_catalog()            # bundled
    catalog = load_catalog("mine.yaml") # bundled + negotiated prices / reservations
"""

from accel.policies.catalog.loader import BUNDLED_DIR, CatalogError, load_catalog, offerings_from_inventory
from accel.policies.catalog.model import (
    Accelerator,
    AssumptionValue,
    Catalog,
    Defaults,
    FilesystemOffer,
    MfuClass,
    NodeLimit,
    Offering,
    Price,
    RegionInfo,
    Source,
)

__all__ = [
    "Accelerator", "AssumptionValue", "BUNDLED_DIR", "Catalog", "CatalogError", "Defaults", "FilesystemOffer",
    "MfuClass", "NodeLimit", "Offering", "Price", "RegionInfo", "Source", "load_catalog", "offerings_from_inventory",
]
