import unittest

from netconf import parse_port


class PortRangeTest(unittest.TestCase):
    def test_rejects(self):
        for bad in ("0", "65536", "http"):
            with self.assertRaises(ValueError):
                parse_port(bad)


if __name__ == "__main__":
    unittest.main()
