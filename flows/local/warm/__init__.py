"""The warm review process: started after a review, it keeps Prefect and the review code
imported, and forks a child for each review the CLI hands it over a Unix socket."""
