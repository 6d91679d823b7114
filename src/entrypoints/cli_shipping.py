"""``upgrader shipping shipped SHIPMENT_ID``: the fulfilment side marks a shipment sent.

Its items move from ``shipping_requested`` to ``shipped`` (``ItemShipped`` events, one
commit with the shipment's ``ShipmentDispatched``). There is no API route for this: the
interface leaves the fulfilment flow open, and it is an operations action.
"""

from __future__ import annotations

import argparse
import sys

from application.config.load import load_config
from application.errors import PlatformError
from entrypoints.cli_args import command


def _shipped(args: argparse.Namespace) -> int:
    from application.inventory.shipping import mark_shipped
    from application.platform import Platform

    platform = Platform(load_config(args.config), pool_size=2)
    try:
        numbers = mark_shipped(platform, args.shipment_id)
    except PlatformError as exc:
        print(f"upgrader: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        platform.close()
    print(f"shipped {args.shipment_id}: items {', '.join(str(n) for n in numbers)}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    shipping = command(commands, "shipping", "fulfilment: mark a shipment shipped", _shipped)
    shipping.add_argument(
        "action", choices=["shipped"], help="shipped: the parcel has left; its items are shipped"
    )
    shipping.add_argument("shipment_id", help="the shipmentId answered by POST /api/s2s/shipping")
