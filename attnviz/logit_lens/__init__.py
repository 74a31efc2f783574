"""(issue 13)"""
