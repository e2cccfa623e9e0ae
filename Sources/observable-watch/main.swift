print("observable-watch")
