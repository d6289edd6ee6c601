"""Publishing a review's findings on the pull/merge request it reviewed, on six platforms:
GitHub, GitLab, Bitbucket Cloud, Bitbucket Data Center, Gitea (Forgejo too) and Azure DevOps."""
