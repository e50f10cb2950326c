import unittest

import settings

EXPECTED = {
    "name": "shop",
    "debug": False,
    "database": {"host": "localhost", "port": 5432, "pool": {"min": 1, "max": 8}, "timeout_s": 30},
    "features": ["search", "wishlist"],
}


class HiddenSettingsTest(unittest.TestCase):
    def test_exactly_one_key_added(self):
        self.assertEqual(settings.load(), EXPECTED)

    def test_timeout_is_an_integer(self):
        self.assertIs(type(settings.load()["database"]["timeout_s"]), int)


if __name__ == "__main__":
    unittest.main()
