from __future__ import annotations

from django.contrib import admin

from addons.models import InstalledAddon, SkillRule


@admin.register(InstalledAddon)
class InstalledAddonAdmin(admin.ModelAdmin[InstalledAddon]):
    # Read-only: installs go through the library, which checks every package.
    list_display = ["addon_id", "source", "enabled", "installed_by", "installed_at"]
    list_filter = ["source", "enabled"]
    readonly_fields = ["addon_id", "source", "entry_point", "manifest", "installed_by"]


@admin.register(SkillRule)
class SkillRuleAdmin(admin.ModelAdmin[SkillRule]):
    list_display = ["addon_id", "skill", "user", "updated_at"]
    search_fields = ["user__username", "skill"]
