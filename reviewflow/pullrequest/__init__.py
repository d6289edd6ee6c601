"""The records of a pull or merge request that the review, its report and publishing share:
what the request is and holds (`models`), what a review knows of it before it starts
(`context`), and what the summary comment remembers between runs (`state`, `markers`)."""
