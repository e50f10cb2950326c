"""Chat channel adapters of the gateway (QQ, Feishu/Lark, Telegram); see ``base``."""
