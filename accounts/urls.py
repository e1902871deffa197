from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("sign-in/", views.SignInView.as_view(), name="login"),
    path(
        "sign-out/",
        auth_views.LogoutView.as_view(next_page="accounts:signed_out"),
        name="logout",
    ),
    path("signed-out/", views.signed_out, name="signed_out"),
    path("sign-up/", views.signup, name="signup"),
    path("settings/", views.settings_page, name="settings"),
    path("organization/", views.organization_page, name="organization"),
    path("agents/", views.agent_list, name="agents"),
    path("agents/new/", views.agent_edit, name="agent_new"),
    path("agents/<int:agent_id>/", views.agent_edit, name="agent_edit"),
    path("agents/<int:agent_id>/delete/", views.agent_delete, name="agent_delete"),
    path("settings/api-tokens/", views.api_tokens_page, name="api_tokens"),
    path(
        "settings/api-tokens/<int:token_id>/rule-files/",
        views.api_token_rule_files_page,
        name="api_token_rule_files",
    ),
    path(
        "settings/api-tokens/<int:token_id>/revoke/",
        views.api_token_revoke_page,
        name="api_token_revoke",
    ),
    path("settings/ai-profiles/new/", views.ai_profile_edit, name="ai_profile_new"),
    path("settings/ai-profiles/<int:profile_id>/", views.ai_profile_edit, name="ai_profile_edit"),
    path(
        "settings/ai-profiles/<int:profile_id>/delete/",
        views.ai_profile_delete,
        name="ai_profile_delete",
    ),
]
