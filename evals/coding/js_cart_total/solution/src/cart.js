// Shopping cart arithmetic. Prices are in cents (integers).

export function lineTotal(item) {
  return item.price * item.qty;
}

export function cartTotal(items) {
  let total = 0;
  for (let i = 0; i < items.length; i++) {
    total += lineTotal(items[i]);
  }
  return total;
}
