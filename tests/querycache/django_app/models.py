"""The test app's models: authors (a unique email), posts (FK to authors), tags (a string
primary key) and post tags (a composite primary key, Django 5.2's CompositePrimaryKey)."""
from django.db import models


class Author(models.Model):
    email = models.CharField(max_length=120, unique=True)
    name = models.CharField(max_length=64)
    karma = models.IntegerField(default=0)

    class Meta:
        app_label = "django_app"

    def row(self):
        """This author as a plain tuple (compared across runs)."""
        return (self.id, self.email, self.name, self.karma)


class Post(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="posts")
    title = models.CharField(max_length=100)
    score = models.IntegerField(default=0)

    class Meta:
        app_label = "django_app"
        ordering = ["id"]

    def row(self):
        """This post as a plain tuple."""
        return (self.id, self.author_id, self.title, self.score)


class Tag(models.Model):
    code = models.CharField(max_length=16, primary_key=True)
    label = models.CharField(max_length=64)

    class Meta:
        app_label = "django_app"


class PostTag(models.Model):
    pk = models.CompositePrimaryKey("post_id", "tag_id")
    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="post_tags")
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE)
    weight = models.IntegerField(default=1)

    class Meta:
        app_label = "django_app"

    def row(self):
        """This post tag as a plain tuple."""
        return (self.post_id, self.tag_id, self.weight)


MODELS = (Author, Tag, Post, PostTag)
