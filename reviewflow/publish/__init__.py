"""Publishing a review's findings on the pull/merge request it reviewed (GitHub, GitLab)."""
