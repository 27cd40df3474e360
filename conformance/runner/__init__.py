"""Running certifications: profiles, the extension certification, exit status."""
