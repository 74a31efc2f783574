"""The attention lab: small, exact teaching computations behind the Learn pages."""
