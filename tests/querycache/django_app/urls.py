"""Two views of the test app and their URLs: an author's page (reads) and a karma bump (a
write, then a read of it in the same request). With ATOMIC_REQUESTS on the workload's
database each request is one transaction, as Django runs it."""
from django.db.models import F
from django.http import JsonResponse
from django.urls import path

from .models import Author, Post, Tag


def page_data(author_id):
    """What an author's page shows: the author, looked up again by email, the top 3 posts
    with their authors (select_related), and a tag."""
    a = Author.objects.get(pk=author_id)
    by_email = Author.objects.get(email=a.email)
    top = list(Post.objects.select_related("author").filter(author=a).order_by("-score", "id")[:3])
    tag = Tag.objects.get(pk="py")
    return {"author": a.row(), "by_email": by_email.row(),
            "top": [p.row() + (p.author.email,) for p in top], "tag": [tag.code, tag.label]}


def author_page(request, author_id):
    """GET /author/<id>/: page_data as JSON."""
    return JsonResponse(page_data(author_id))


def bump_karma(request, author_id):
    """POST /author/<id>/karma/: karma + 1 (an UPDATE with F()), then the page as JSON."""
    Author.objects.filter(pk=author_id).update(karma=F("karma") + 1)
    return JsonResponse(page_data(author_id))


urlpatterns = [
    path("author/<int:author_id>/", author_page),
    path("author/<int:author_id>/karma/", bump_karma),
]
