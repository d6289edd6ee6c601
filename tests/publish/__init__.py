"""Publishing on pull and merge requests against local fakes of GitHub and GitLab."""
