-- The client that created each observer (a digest of its bearer token, or
-- its address), so that the observers one client may hold are counted
-- again after a restart and by every instance. NULL for the observers
-- made before: they count toward no client.
ALTER TABLE observers ADD COLUMN owner TEXT;
