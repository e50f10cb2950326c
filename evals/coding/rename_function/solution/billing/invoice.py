"""Invoices as text."""

from billing.totals import compute_total


def render(customer, lines, tax_rate=0.0):
    rows = [f"{line['label']}: {line['amount']:.2f}" for line in lines]
    total = compute_total(lines, tax_rate)
    return "\n".join([f"Invoice for {customer}", *rows, f"Total: {total:.2f}"])
