ObservableServerCommand.main()
