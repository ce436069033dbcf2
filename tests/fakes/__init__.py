"""Fakes of outside services that tests reach over real sockets, so real client code runs."""
