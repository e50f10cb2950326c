import { test } from "node:test";
import assert from "node:assert/strict";
import { cartTotal } from "../src/cart.js";

test("single item", () => {
  assert.equal(cartTotal([{ price: 999, qty: 1 }]), 999);
});

test("many items", () => {
  const items = Array.from({ length: 10 }, (_, i) => ({ price: 100 * (i + 1), qty: 2 }));
  assert.equal(cartTotal(items), 11000);
});
