from __future__ import annotations

from django.urls import path

from knowledge import views

urlpatterns = [
    path("", views.store_list, name="knowledge"),
    path("new/", views.store_new, name="knowledge_new"),
    path("<int:store_id>/", views.store_page, name="knowledge_store"),
    path("<int:store_id>/delete/", views.store_delete, name="knowledge_store_delete"),
    path("<int:store_id>/rebuild/", views.store_rebuild, name="knowledge_store_rebuild"),
    path("<int:store_id>/folders/", views.source_add_folder, name="knowledge_add_folder"),
    path("<int:store_id>/uploads/", views.source_upload, name="knowledge_upload"),
    path("<int:store_id>/search/", views.test_search, name="knowledge_search"),
    path("<int:store_id>/files/", views.store_files, name="knowledge_files"),
    path("<int:store_id>/sharing/", views.store_sharing, name="knowledge_sharing"),
    path(
        "files/<int:document_id>/remove/", views.document_remove, name="knowledge_document_remove"
    ),
    path(
        "sources/<int:source_id>/<str:action>/", views.source_action, name="knowledge_source_action"
    ),
    path("jobs/<int:job_id>/", views.job_status, name="knowledge_job"),
    path("jobs/<int:job_id>/<str:action>/", views.job_action, name="knowledge_job_action"),
]
