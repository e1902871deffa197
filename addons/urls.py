from __future__ import annotations

from django.urls import path

from addons import views

app_name = "addons"

urlpatterns = [
    path("", views.library, name="library"),
    path("install/", views.install_upload, name="install_upload"),
    path("install-entry-point/", views.install_entry_point, name="install_entry_point"),
    path("log/", views.log, name="log"),
    # Before the add-on pages: "skills" and "log" are no add-on ids here.
    path("skills/", views.skills_page, name="skills"),
    path("skills/<slug:addon_id>/<slug:name>/", views.skill_page, name="skill"),
    path("skills/<slug:addon_id>/<slug:name>/tags/", views.skill_tags, name="skill_tags"),
    path("skills/<slug:addon_id>/<slug:name>/delete/", views.skill_delete, name="skill_delete"),
    path("<slug:addon_id>/", views.detail, name="detail"),
    path("<slug:addon_id>/enabled/", views.set_enabled, name="set_enabled"),
    path("<slug:addon_id>/enabled-for-me/", views.set_enabled_for_me, name="set_enabled_for_me"),
    path("<slug:addon_id>/remove/", views.remove, name="remove"),
    path("<slug:addon_id>/skills/<slug:skill>/rules/", views.rules_save, name="rules_save"),
    path("<slug:addon_id>/pages/<int:number>/", views.page_frame, name="page"),
    path("<slug:addon_id>/files/<path:path>", views.package_file, name="file"),
]
