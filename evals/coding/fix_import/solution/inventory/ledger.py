"""Stock levels by SKU."""

from inventory.utils import normalize_sku


class Ledger:
    def __init__(self):
        self._stock = {}

    def receive(self, sku, qty):
        key = normalize_sku(sku)
        self._stock[key] = self._stock.get(key, 0) + qty

    def ship(self, sku, qty):
        key = normalize_sku(sku)
        if self._stock.get(key, 0) < qty:
            raise ValueError(f"not enough {key} in stock")
        self._stock[key] -= qty

    def level(self, sku):
        return self._stock.get(normalize_sku(sku), 0)
