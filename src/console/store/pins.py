"""Each pool's effective pin: the inventory's ``[pools.pin]``, overridden field by field by the pin stored
with ``pin --from-node``. One function, so every engine (sweep, drift, the console's, check-local) and
every screen judges a node against the same pin."""

from __future__ import annotations

from collections.abc import Mapping

from console.inventory.model import Inventory, StackPin
from console.store.db import Store

FIRMWARE_PREFIX = "firmware."
_STACK_FIELDS = tuple(name for name in StackPin.model_fields if name != "firmware")


def pin_from_fields(fields: Mapping[str, str]) -> StackPin:
    """A ``StackPin`` from ``pinned_fields`` form; keys that are not pin fields (``amdsmi``) are dropped."""
    firmware = {k.removeprefix(FIRMWARE_PREFIX): v for k, v in fields.items() if k.startswith(FIRMWARE_PREFIX) and v}
    scalars = {k: v for k, v in fields.items() if k in _STACK_FIELDS and v}
    return StackPin(firmware=firmware, **scalars)


def effective_pins(inventory: Inventory, store: Store | None) -> dict[str, StackPin]:
    """Each pool's pin: the inventory's, overridden field by field by the pin stored with ``pin --from-node``."""
    pins: dict[str, StackPin] = {}
    for name, pool in inventory.pools.items():
        stored = store.pin(name) if store is not None else {}
        pins[name] = pin_from_fields({**pool.pin.pinned_fields(), **stored}) if stored else pool.pin
    return pins


def pin_overrides(inventory: Inventory, store: Store | None) -> list[str]:
    """Where a pin stored with ``pin --from-node`` overrides a different value of the inventory's pin."""
    lines = []
    for name, pool in inventory.pools.items():
        stored = store.pin(name) if store is not None else {}
        for field, value in sorted(pool.pin.pinned_fields().items()):
            if field in stored and stored[field] != value:
                lines.append(
                    f"pool {name}: {field} {stored[field]} (stored by 'pin --from-node') overrides the inventory's"
                    f" {value}; 'pin --clear --pool {name}' goes back to the inventory's pin"
                )
    return lines
